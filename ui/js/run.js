// A run: its facts, its log followed live over the run's event stream
// (EventSource, GET .../runs/:id/events), then its result and artifact.
import { api, path, Problem } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showProblem } from './page.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

function facts(rows) {
    return h('dl', { class: 'facts' },
             rows.filter(([, v]) => v !== null && v !== undefined && v !== '')
                 .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function resultView(org, run) {
    const out = [];
    if (run.error) {
        out.push(h('h2', {}, 'Error'),
                 facts([['Code', h('code', {}, run.error.code)], ['Message', run.error.message]]));
    }
    const r = run.result;
    if (r) {
        out.push(h('h2', {}, 'Result'), facts([
            ['Summary', r.summary],
            ['Commit', r.commit ? h('code', {}, r.commit) : null],
            ['Files', (r.files || []).length ? h('ul', {}, r.files.map((f) => h('li', {}, f))) : null],
            ['Checks', r.checks ? h('code', {}, `${r.checks.command} → exit ${r.checks.exit}`) : null],
            ['Steps', r.steps],
        ]));
        out.push(h('p', {}, h('a', { class: 'button', id: 'artifact',
                                     href: path`/api/orgs/${org}/runs/${run.id}/artifact`,
                                     download: `${run.id}.bundle` },
                              'Download the artifact (git bundle)')));
    }
    return out;
}

export async function runPage(main, me, org, project, id) {
    const base = path`/api/orgs/${org}/projects/${project}/runs/${id}`;
    let run = await api('GET', base);
    document.title = `Run ${run.id} · mod_svc`;
    const status = h('span', { id: 'run-status' }, badge(run.status));
    const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel',
                                 onclick: () => act(async () => {
                                     run = await api('POST', base + '/cancel');
                                     cancel.disabled = true;
                                 }) }, 'Cancel run');
    const log = h('pre', { class: 'log', id: 'log', tabindex: 0, 'aria-label': 'Run log' });
    const result = h('div', { id: 'result' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}/projects/${project}` },
                             '← Project')),
                h('h1', {}, 'Run ', h('code', {}, run.id)),
                facts([['Status', status], ['Project', run.project],
                       ['Started', when(run.started_at)], ['Finished', when(run.finished_at)]]),
                h('h2', {}, 'Instructions'), h('pre', { class: 'log' }, run.instructions),
                FINAL.has(run.status) ? null : h('p', {}, cancel),
                h('h2', {}, 'Log'), log, result);

    const finish = async () => {
        cancel.remove();
        run = await api('GET', base);
        clear(status).append(badge(run.status));
        clear(result).append(...resultView(org, run));
    };
    // The stream replays the run's whole history, then goes on live, and
    // ends after the final status; EventSource would reconnect after that
    // end, so it is closed then. Reconnects in between (Last-Event-ID,
    // sent by EventSource itself) lose and repeat nothing.
    const es = new EventSource(base + '/events');
    es.addEventListener('run.log', (ev) => {
        const d = JSON.parse(ev.data);
        log.append(document.createTextNode(d.line + '\n'));
        log.scrollTop = log.scrollHeight;
    });
    es.addEventListener('run.status', (ev) => {
        const d = JSON.parse(ev.data);
        clear(status).append(badge(d.status));
        if (FINAL.has(d.status)) {
            es.close();
            act(finish);
        }
    });
    es.addEventListener('error', () => {
        if (es.readyState !== EventSource.CLOSED) {
            return;     // the browser reconnects by itself
        }
        // Refused before it started (401, 404, 429): the answer's problem
        // document is not visible to EventSource; ask the run again.
        act(async () => {
            await finish();
            if (!FINAL.has(run.status)) {
                throw new Problem(0, { detail: 'The live log stream was refused; reload to try again.' });
            }
        });
    });
    window.addEventListener('pagehide', () => es.close());
    showProblem(null);
}
