// A deployment's page (docs/api/deployments.md): its facts and plan, the
// actions its status allows, scaling, and its telemetry: the logs its agent
// uploads when asked, metrics, uptime, and its incidents (improvements the
// service files for it, approved or rejected here). The org's event stream
// keeps the page current: a status change, an upload of logs and an
// incident each show at once.
import { api, path } from './api.js';
import { h, append, clear, when, badge } from './dom.js';
import { act, showStatus } from './page.js';
import { deploymentActions } from './deploy.js';
import { decideImprovement } from './pipeline.js';

function facts(rows) {
    return h('dl', { class: 'facts' },
             rows.filter(([, v]) => v !== null && v !== undefined && v !== '')
                 .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function planView(p) {
    return p ? [h('code', {}, `v${p.version}`), ' ', h('code', {}, p.command), ' · ',
                `${p.replicas} replica(s), ${p.memory_mb} MiB, health ${p.health_path} · `,
                h('span', { class: 'muted' }, `${p.source}: ${p.notes || ''}`)] : null;
}

const mib = (b) => (b === null || b === undefined ? '—' : `${(b / 1048576).toFixed(1)} MiB`);

// The metrics' latest point of each series (each replica, then their sum).
function metricsView(m) {
    if (!m.series.length) {
        return h('p', { class: 'muted' }, 'No samples in the last hour.');
    }
    const head = ['Replica', 'At', 'CPU seconds', 'Memory', 'Open files', 'Restarts', 'Points'];
    const rows = m.series.map((s) => {
        const [at, cpu, rss, fds, restarts] = s.points[s.points.length - 1] || [];
        return h('tr', { 'data-replica': s.replica === null ? 'all' : s.replica },
                 h('th', { scope: 'row' }, s.replica === null ? 'all' : String(s.replica)),
                 h('td', {}, when(at)), h('td', {}, cpu), h('td', {}, mib(rss)),
                 h('td', {}, fds), h('td', {}, restarts), h('td', {}, s.points.length));
    });
    // It scrolls sideways on a narrow screen: focusable, so a keyboard scrolls it too.
    return h('div', { class: 'table', tabindex: 0, role: 'region', 'aria-label': 'Metrics' },
             h('table', {},
               h('caption', {}, `The last hour, in steps of ${m.step} s: the latest step`),
               h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
               h('tbody', {}, rows)));
}

// Uptime: the availability, and the last hour's buckets as a strip.
function uptimeView(u) {
    const last = u.buckets.slice(-60);
    const count = (st) => last.filter((b) => b.status === st).length;
    return [facts([
        ['Availability', u.availability === null ? 'no probes yet'
            : `${(u.availability * 100).toFixed(2)} %`],
        ['Window', `${u.window}, by ${u.bucket}`],
        ['Unknown buckets', String(u.unknown_buckets)],
        ['Last probe', when(u.last_probe_at) || 'never'],
    ]), h('div', { class: 'uptime', role: 'img',
                   'aria-label': `The last ${last.length} ${u.bucket}s: ${count('up')} up, `
                       + `${count('down')} down, ${count('partial')} partial, `
                       + `${count('unknown')} unknown` },
          last.map((b) => h('span', { class: `bucket ${b.status}`,
                                      title: `${when(b.start)}: ${b.status}` })))];
}

export async function deploymentPage(main, me, org, id) {
    const base = path`/api/orgs/${org}/deployments/${id}`;
    const [o, first] = await Promise.all([api('GET', path`/api/orgs/${org}`), api('GET', base)]);
    const admin = o.role === 'owner' || o.role === 'admin';
    const writer = o.role !== 'viewer';
    let d = first;
    document.title = `Deployment ${d.id} · ${o.name} · mod_svc`;
    const head = h('div', { id: 'deployment' });
    const logs = h('pre', { class: 'log', id: 'logs', tabindex: 0, role: 'log', 'aria-label': 'Logs' });
    const logsInfo = h('p', { class: 'muted', id: 'logs-info' });
    const metrics = h('div', { id: 'metrics' });
    const uptime = h('div', { id: 'uptime' });
    const incidents = h('ul', { class: 'list', id: 'incidents' });
    const lines = h('input', { name: 'lines', type: 'number', min: 1, max: 5000, value: 200,
                               inputmode: 'numeric' });
    const windowSel = h('select', { name: 'window', onchange: () => act(showUptime) },
                        ['24h', '7d', '30d'].map((w) => h('option', { value: w }, w)));
    let asked = null;       // the log request this page waits for

    append(main, [h('p', {}, h('a', { href: path`/orgs/${org}/deployments` }, '← Deployments')),
                h('h1', {}, 'Deployment ', h('code', {}, d.id)), head,
                h('h2', {}, 'Logs'),
                writer ? h('form', { class: 'inline', id: 'request-logs', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const r = await api('POST', base + '/request-logs',
                                            { lines: Number(lines.value) });
                        asked = r.log_request_id;
                        clear(logsInfo).append(`Asked the agent for the last ${r.lines} lines `
                                               + `(${r.log_request_id}); they show here when it `
                                               + 'uploads them.');
                    });
                } }, h('label', {}, 'Lines of each replica', lines),
                  h('button', { type: 'submit' }, 'Fetch logs')) : null,
                logsInfo, logs,
                h('h2', {}, 'Metrics'), metrics,
                h('h2', {}, 'Uptime'), h('form', { class: 'inline', id: 'uptime-window',
                                                    onsubmit: (ev) => ev.preventDefault() },
                                          h('label', {}, 'Window', windowSel)),
                uptime,
                h('h2', {}, 'Incidents'), incidents,
                h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'refresh',
                                         onclick: () => act(refresh) }, 'Refresh'))]);

    function showHead() {
        const scale = h('input', { name: 'replicas', type: 'number', min: 0, max: 10,
                                   value: d.replicas, inputmode: 'numeric' });
        const t = d.telemetry || {};
        const reps = (d.workload && d.workload.replicas) || [];
        append(clear(head), [
            facts([
                ['Status', h('span', { id: 'dep-status' }, badge(d.status))],
                ['Project', d.project],
                ['Target', `${d.target_id} (${d.target_status})`],
                ['Run', h('a', { href: path`/orgs/${org}/projects/${d.project}/runs/${d.run_id}` },
                          d.run_id)],
                ['Replicas', h('span', { id: 'dep-replicas' }, String(d.replicas))],
                ['Plan', planView(d.plan) || 'being planned'],
                ['Running on', planView(d.applied_plan)],
                ['Error', d.error ? [h('code', {}, d.error.code), ' ', d.error.message] : null],
                ['Workload', reps.length ? h('ul', { id: 'workload' }, reps.map((r) =>
                    h('li', {}, `replica ${r.index}: port ${r.port}, `
                                + `${r.healthy ? 'healthy' : 'not healthy'}, `
                                + `${r.restarts} restart(s)`))) : null],
                ['Handed over to', d.workload && d.workload.separated_to],
                ['Reported', `samples ${when(t.last_sample_at) || 'never'} · probes `
                             + `${when(t.last_probe_at) || 'never'} · logs ${when(t.logs_at) || 'never'}`],
                ['Open incident', t.open_incident ? h('code', {}, t.open_incident) : null],
                ['Updated', when(d.updated_at)],
            ]),
            deploymentActions(org, d, admin, refresh),
            writer && (d.status === 'running' || d.status === 'stopped')
                ? h('form', { class: 'inline', id: 'scale', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        d = await api('POST', base + '/scale', { replicas: Number(scale.value) });
                        showStatus(`Scaled to ${d.replicas}.`);
                        showHead();
                    });
                } }, h('label', {}, 'Replicas (0 to 10)', scale),
                  h('button', { type: 'submit' }, 'Scale')) : null]);
    }

    async function showLogs(request) {
        try {
            const text = await api('GET', base + '/logs' + (request ? `?request=${
                encodeURIComponent(request)}` : ''), undefined, { text: true });
            clear(logs).append(text);
            clear(logsInfo).append(request ? `Uploaded for ${request}.` : 'The latest upload.');
        } catch (e) {
            if (e.status !== 404) {
                throw e;
            }
            clear(logs);
            clear(logsInfo).append('No logs uploaded yet: ask for them.');
        }
    }

    async function showUptime() {
        const u = await api('GET', base + `/uptime?window=${windowSel.value}`);
        append(clear(uptime), uptimeView(u));
    }

    async function showIncidents() {
        const l = await api('GET', path`/api/orgs/${org}/projects/${d.project}/improvements`
                                   + '?source=incident&limit=50');
        const mine = l.data.filter((i) => i.source_ref === d.id);
        clear(incidents);
        if (!mine.length) {
            incidents.append(h('li', { class: 'muted' }, 'None.'));
        }
        for (const i of mine) {
            const decided = i.status === 'approved'
                ? ['into ', h('a', { href: path`/orgs/${org}/requests/${i.request_id}` },
                              'its request')]
                : i.status === 'rejected' ? `: ${i.reason}` : null;
            incidents.append(h('li', { 'data-improvement-id': i.id },
                badge(i.status), ' ', h('strong', {}, i.title), ' ', decided, ' ',
                h('span', { class: 'muted' }, when(i.created_at)),
                h('pre', { class: 'log' }, i.body),
                i.status === 'open' && writer ? decideImprovement(org, i, {
                    approved: async () => {
                        showStatus('Incident approved: a request is made of it.');
                        await showIncidents();
                    },
                    rejected: async () => {
                        showStatus('Incident rejected.');
                        await showIncidents();
                    },
                }) : null));
        }
    }

    async function refresh() {
        d = await api('GET', base);
        showHead();
        const [m] = await Promise.all([api('GET', base + '/metrics'), showUptime(),
                                       showIncidents(), asked ? null : showLogs(null)]);
        clear(metrics).append(metricsView(m));
    }

    // The org's stream from now on: what concerns this deployment.
    const es = new EventSource(path`/api/orgs/${org}/events`);
    const mineOnly = (fn) => (ev) => {
        const x = JSON.parse(ev.data);
        if (x.deployment_id === d.id) {
            act(() => fn(x));
        }
    };
    es.addEventListener('deployment.status', mineOnly(async () => {
        d = await api('GET', base);
        showHead();
    }));
    es.addEventListener('deployment.logs', mineOnly(async (x) => {
        if (!asked || x.log_request_id === asked) {
            asked = null;
            await showLogs(x.log_request_id);
        }
    }));
    es.addEventListener('deployment.incident', mineOnly(async () => {
        d = await api('GET', base);
        showHead();
        await showIncidents();
    }));
    addEventListener('pagehide', () => es.close());
    await refresh();
}
