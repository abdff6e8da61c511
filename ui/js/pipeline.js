// The pipeline (docs/api/pipeline.md): an org's requests by stage, a new
// request, and one request's page: its stages, the actions its stage
// offers (advance, run-all, pause/resume, approve the integration,
// cancel), its documents (approve a draft, add a section), its build tasks
// and their runs, the cost estimate next to the actual usage.
import { api, path } from './api.js';
import { h, clear, when, badge, firstLine } from './dom.js';
import { act, showProblem, showStatus } from './page.js';

export const STAGES = ['intake', 'planning', 'review', 'build', 'integration', 'done'];

export function money(v, currency = 'USD') {
    return v === null || v === undefined ? '—' : `${Number(v).toFixed(4)} ${currency}`;
}

export async function requestsPage(main, me, org) {
    const [o, projects, reqs] = await Promise.all([
        api('GET', path`/api/orgs/${org}`),
        api('GET', path`/api/orgs/${org}/projects` + '?archived=false&limit=200'),
        api('GET', path`/api/orgs/${org}/requests` + '?limit=200'),
    ]);
    document.title = `Pipeline · ${o.name} · mod_svc`;
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Pipeline'));
    const groups = [...STAGES, 'cancelled'];
    for (const g of groups) {
        const mine = reqs.data.filter((r) => (g === 'cancelled'
            ? r.status === 'cancelled' : r.stage === g && r.status !== 'cancelled'));
        const list = h('ul', { class: 'list', id: `stage-${g}` });
        if (!mine.length) {
            list.append(h('li', { class: 'muted' }, 'None.'));
        }
        list.append(...mine.map((r) => h('li', { 'data-request-id': r.id },
            h('a', { href: path`/orgs/${org}/requests/${r.id}` }, r.title), ' ',
            r.status !== 'active' && r.status !== 'done' ? badge(r.status) : null, ' ',
            h('span', { class: 'muted' }, `${r.kind} · ${r.project} · ${when(r.updated_at)}`))));
        main.append(h('h2', {}, `${g[0].toUpperCase()}${g.slice(1)} (${mine.length})`), list);
    }

    const imps = h('div', {}, await improvements(org, projects.data));
    main.append(h('h2', {}, 'Open improvements'), imps,
                h('h2', {}, 'File an improvement'),
                fileImprovement(org, projects.data, async () =>
                    clear(imps).append(await improvements(org, projects.data))));

    const project = h('select', { name: 'project', required: true },
                      projects.data.map((p) => h('option', { value: p.slug }, p.name)));
    const kind = h('select', { name: 'kind' },
                   ['build', 'improvement'].map((k) => h('option', { value: k }, k)));
    const title = h('input', { name: 'title', required: true, maxlength: 200, autocomplete: 'off' });
    const body = h('textarea', { name: 'body', maxlength: 65536 });
    const submit = h('button', { type: 'submit' }, 'Create request');
    main.append(h('h2', {}, 'New request'),
                h('form', { class: 'stack', id: 'new-request', onsubmit: (ev) => {
                    ev.preventDefault();
                    submit.disabled = true;
                    act(async () => {
                        const r = await api('POST', path`/api/orgs/${org}/requests`,
                                            { project: project.value, kind: kind.value,
                                              title: title.value, body: body.value },
                                            { idempotencyKey: crypto.randomUUID() });
                        location.assign(path`/orgs/${org}/requests/${r.id}`);
                    }).finally(() => { submit.disabled = false; });
                } },
                  h('label', {}, 'Project', project), h('label', {}, 'Kind', kind),
                  h('label', {}, 'Title', title), h('label', {}, 'What to build (Markdown)', body),
                  h('div', {}, submit)));
}

// The open improvements (bug reports, feature asks) of the org's first
// projects (the API lists them per project): approving one makes a request
// in intake; rejecting takes a reason.
async function improvements(org, projects) {
    const list = h('ul', { class: 'list', id: 'improvements' });
    const lists = await Promise.all(projects.slice(0, 20).map((p) =>
        api('GET', path`/api/orgs/${org}/projects/${p.slug}/improvements` + '?status=open&limit=50')
            .then((page) => page.data)));
    const open = lists.flat().sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
    if (!open.length) {
        list.append(h('li', { class: 'muted' }, 'None.'));
    }
    for (const i of open) {
        list.append(h('li', { 'data-improvement-id': i.id },
            badge(i.kind), ' ', h('strong', {}, i.title), ' ',
            h('span', { class: 'muted' }, `${i.project} · ${i.source} · ${when(i.created_at)}`),
            i.body ? h('pre', { class: 'log' }, i.body) : null,
            decideImprovement(org, i, {
                approved: (x) => location.assign(path`/orgs/${org}/requests/${x.request_id}`),
                rejected: (ev) => {
                    showStatus(`${i.title}: rejected.`);
                    ev.target.closest('li').remove();
                },
            })));
    }
    return list;
}

// decideImprovement(org, i, {approved(improvement), rejected(event)}): an
// open improvement's Approve (into a request) and Reject (with a reason).
export function decideImprovement(org, i, then) {
    const base = path`/api/orgs/${org}/improvements/${i.id}`;
    const reason = h('input', { name: 'reason', required: true, maxlength: 10000,
                                autocomplete: 'off' });
    return h('div', { class: 'actions' },
        h('button', { type: 'button', 'aria-label': `Approve ${i.title}`,
                      onclick: () => act(async () => {
                          await then.approved(await api('POST', base + '/approve'));
                      }) }, 'Approve'),
        h('form', { class: 'inline', onsubmit: (ev) => {
            ev.preventDefault();
            act(async () => {
                await api('POST', base + '/reject', { reason: reason.value });
                await then.rejected(ev);
            });
        } }, h('label', {}, 'Reason', reason),
          h('button', { type: 'submit', class: 'danger', 'aria-label': `Reject ${i.title}` },
            'Reject')));
}

// A bug report or a feature ask for a project (any member but viewers):
// listed with the open improvements once filed (then filed()).
function fileImprovement(org, projects, filed) {
    const project = h('select', { name: 'project', required: true },
                      projects.map((p) => h('option', { value: p.slug }, p.name)));
    const kind = h('select', { name: 'kind' },
                   ['bug', 'feature'].map((k) => h('option', { value: k }, k)));
    const title = h('input', { name: 'title', required: true, maxlength: 200, autocomplete: 'off' });
    const body = h('textarea', { name: 'body', maxlength: 65536 });
    return h('form', { class: 'stack', id: 'new-improvement', onsubmit: (ev) => {
        ev.preventDefault();
        act(async () => {
            const i = await api('POST', path`/api/orgs/${org}/projects/${project.value}/improvements`,
                                { kind: kind.value, title: title.value, body: body.value });
            title.value = '';
            body.value = '';
            showStatus(`${i.title}: filed.`);
            await filed();
        });
    } }, h('label', {}, 'Project', project), h('label', {}, 'Kind', kind),
      h('label', {}, 'Title', title), h('label', {}, 'What and why', body),
      h('div', {}, h('button', { type: 'submit' }, 'File improvement')));
}

// The actions a request's stage offers: [id, label, API action, class].
function actionsOf(r) {
    const out = [];
    const open = r.status !== 'cancelled' && r.status !== 'done';
    const next = STAGES[STAGES.indexOf(r.stage) + 1];
    if (open && ['intake', 'planning', 'review'].includes(r.stage)) {
        out.push(['advance', `Advance to ${next}`, 'advance']);
        if (r.stage !== 'review') {
            out.push(['advance-to-build', 'Advance straight to build', 'advance-to-build',
                      'secondary']);
        }
    }
    if (r.stage === 'build' && r.status === 'active') {
        out.push(['run-all', 'Run the build tasks', 'build-tasks/run-all'],
                 ['advance', 'Advance to integration', 'advance', 'secondary'],
                 ['pause', 'Pause the build', 'build/pause', 'secondary']);
    }
    if (r.stage === 'build' && r.status === 'paused') {
        out.push(['resume', 'Resume the build', 'build/resume']);
    }
    if (r.stage === 'integration' && open) {
        out.push(['approve-integration', 'Approve the integration', 'integration/approve']);
    }
    if (open) {
        out.push(['cancel-request', 'Cancel the request', 'cancel', 'danger']);
    }
    return out;
}

function stageTrack(r) {
    return h('ol', { class: 'stages', id: 'stage-track', 'aria-label': 'Stages' },
             STAGES.map((s, i) => {
                 const here = s === r.stage;
                 const past = i < STAGES.indexOf(r.stage);
                 return h('li', { class: here ? 'here' : past ? 'past' : null,
                                  'aria-current': here ? 'step' : null }, s);
             }));
}

export async function requestPage(main, me, org, id) {
    const base = path`/api/orgs/${org}/requests/${id}`;
    const view = h('div', { id: 'request' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}/requests` }, '← Pipeline')), view);
    let timer = null;
    let busy = false;
    window.addEventListener('pagehide', () => clearTimeout(timer));

    // Refreshing leaves a refusal shown (act() would clear it).
    const quiet = () => refresh().catch(showProblem);

    async function refresh() {
        clearTimeout(timer);
        const l = await api('GET', base + '/lifecycle');
        render(l);
        // While tasks run, follow them (the request moves on by itself).
        if (l.request.stage === 'build'
            && l.build_tasks.some((t) => t.status === 'queued' || t.status === 'running')) {
            timer = setTimeout(quiet, 2000);
        }
    }

    async function run(fn, done) {
        if (busy) {
            return;
        }
        busy = true;
        view.querySelectorAll('button').forEach((b) => { b.disabled = true; });
        await act(async () => {
            await fn();
            if (done) {
                showStatus(done);
            }
        });
        busy = false;
        await quiet();
    }

    function render(l) {
        const r = l.request;
        document.title = `${r.title} · Pipeline · mod_svc`;
        const cur = l.estimate && l.estimate.currency || 'USD';
        clear(view).append(
            h('h1', {}, r.title),
            stageTrack(r),
            h('dl', { class: 'facts' },
              h('dt', {}, 'Stage'), h('dd', { id: 'req-stage' }, r.stage),
              h('dt', {}, 'Status'), h('dd', { id: 'req-status' }, badge(r.status)),
              h('dt', {}, 'Project'), h('dd', {}, h('a', { href: path`/orgs/${org}/projects/${r.project}` },
                                                    r.project)),
              h('dt', {}, 'Kind'), h('dd', {}, r.kind),
              h('dt', {}, 'Created'), h('dd', {}, when(r.created_at)),
              r.integration_approved_at ? [h('dt', {}, 'Integration approved'),
                                           h('dd', {}, when(r.integration_approved_at))] : null),
            r.body ? h('pre', { class: 'log', id: 'req-body' }, r.body) : null);

        const acts = actionsOf(r);
        if (acts.length) {
            view.append(h('h2', {}, 'Actions'),
                        h('div', { class: 'actions', id: 'actions' }, acts.map(([aid, label, a, cls]) =>
                            h('button', { type: 'button', id: aid, class: cls,
                                          onclick: () => run(() => api('POST', `${base}/${a}`),
                                                             `${label}: done.`) }, label))));
        }

        view.append(h('h2', {}, 'History'),
                    h('ol', { class: 'list', id: 'history' }, l.stages.map((s) =>
                        h('li', {}, h('strong', {}, s.stage), ' ', badge(s.status), ' ',
                          h('span', { class: 'muted' },
                            `${s.via} · ${s.entered_by ? s.entered_by.name : 'the service'} · `
                            + when(s.entered_at))))));

        // Documents: planning and review are about them.
        const docs = h('ul', { class: 'list', id: 'documents' });
        view.append(h('h2', {}, 'Documents'),
                    l.product ? h('p', {}, h('a', { href: path`/orgs/${org}/products/${l.product.id}` },
                                             `Product: ${l.product.name}`)) : null,
                    docs);
        if (!l.documents.length) {
            docs.append(h('li', { class: 'muted' },
                          l.product ? 'No documents yet.' : 'The product is made when the request '
                          + 'enters planning.'));
        }
        const deciding = ['intake', 'planning', 'review'].includes(r.stage) && r.status === 'active';
        for (const d of l.documents) {
            const approve = deciding && !d.approved && d.current_status === 'draft'
                ? h('button', { type: 'button', class: 'secondary',
                                'aria-label': `Approve ${d.title}`,
                                onclick: () => run(() => api('POST',
                                    path`/api/orgs/${org}/doc-versions/${d.current_version_id}/approve`),
                                                   `${d.title}: approved.`) }, 'Approve')
                : null;
            docs.append(h('li', { 'data-document-id': d.id },
                          h('a', { href: path`/orgs/${org}/documents/${d.id}` }, d.title), ' ',
                          h('span', { class: 'muted' }, `${d.kind} · version ${d.current_version_number}`),
                          ' ', badge(d.current_status), ' ', approve));
        }
        if (l.product && deciding) {
            const title = h('input', { name: 'title', required: true, maxlength: 200,
                                       autocomplete: 'off' });
            const body = h('textarea', { name: 'body', required: true });
            view.append(h('form', { class: 'stack', id: 'new-section', onsubmit: (ev) => {
                ev.preventDefault();
                run(() => api('POST', path`/api/orgs/${org}/products/${l.product.id}/documents`,
                              { kind: 'section', title: title.value, body: body.value }),
                    'Section added.');
            } },
                h('h3', {}, 'Add a section'),
                h('label', {}, 'Title', title), h('label', {}, 'Text (Markdown)', body),
                h('div', {}, h('button', { type: 'submit' }, 'Add section'))));
        }

        // Build tasks and their runs.
        const tasks = h('ul', { class: 'list', id: 'tasks' });
        view.append(h('h2', {}, 'Build tasks'), tasks);
        if (!l.build_tasks.length) {
            tasks.append(h('li', { class: 'muted' }, 'One task per section, made when the request '
                           + 'enters build.'));
        }
        for (const t of l.build_tasks) {
            tasks.append(h('li', { 'data-task-id': t.id },
                h('strong', {}, `${t.position}. ${t.title}`), ' ', badge(t.status),
                t.error_code ? [' ', h('code', {}, t.error_code)] : null, ' ',
                h('span', { class: 'muted' },
                  `estimate ${money(t.estimate && t.estimate.cost, cur)} · used `
                  + money(t.usage && t.usage.cost, cur)),
                t.runs.length ? h('ul', { class: 'runs' }, t.runs.map((x) => h('li', {},
                    h('a', { href: path`/orgs/${org}/projects/${r.project}/runs/${x.run_id}` },
                      x.run_id), ' ', badge(x.status),
                    h('span', { class: 'muted' }, ` ${when(x.created_at)}`)))) : null));
        }

        // The estimate, next to what was used.
        const e = l.estimate;
        view.append(h('h2', {}, 'Cost'),
                    h('dl', { class: 'facts', id: 'estimate' },
                      h('dt', {}, 'Estimate'), h('dd', { id: 'estimate-total' }, money(e && e.total, cur)),
                      h('dt', {}, 'Model'), h('dd', {}, e && e.model ? e.model : '—'),
                      h('dt', {}, 'Used by the runs'),
                      h('dd', {}, money(l.usage && l.usage.actual && l.usage.actual.cost, cur)),
                      h('dt', {}, 'Planning'),
                      h('dd', {}, money(l.usage && l.usage.planning && l.usage.planning.cost, cur)),
                      h('dt', {}, 'Basis'), h('dd', { class: 'muted' }, e && e.basis ? e.basis : '—')));

        if (l.improvements && l.improvements.length) {
            view.append(h('h2', {}, 'Made from'),
                        h('ul', { class: 'list' }, l.improvements.map((i) =>
                            h('li', {}, badge(i.kind), ' ', firstLine(i.title)))));
        }
    }

    await refresh();
}
