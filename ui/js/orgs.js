// Home (your organizations), an organization's home (projects, recent
// runs) and a project's runs.
import { api, path } from './api.js';
import { h, when, badge, firstLine } from './dom.js';
import { act } from './page.js';

export async function homePage(main, me) {
    document.title = 'Organizations · mod_svc';
    main.append(h('h1', {}, 'Your organizations'));
    if (me.orgs.length) {
        main.append(h('ul', { class: 'list', id: 'orgs' }, me.orgs.map((o) =>
            h('li', {}, h('a', { href: path`/orgs/${o.slug}` }, o.name), ' ',
              h('span', { class: 'muted' }, `(${o.slug}, ${o.role})`)))));
    } else {
        main.append(h('p', { class: 'muted' }, 'You are not a member of any organization yet.'));
    }
    const slug = h('input', { name: 'slug', required: true, maxlength: 63, autocomplete: 'off' });
    const name = h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    main.append(h('h2', {}, 'New organization'),
                h('form', { class: 'inline', id: 'new-org', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const o = await api('POST', '/api/orgs',
                                            { slug: slug.value, name: name.value });
                        location.assign(path`/orgs/${o.slug}`);
                    });
                } },
                  h('label', {}, 'Slug', slug), h('label', {}, 'Name', name),
                  h('button', { type: 'submit' }, 'Create organization')));
}

// The newest runs of the org: the runs of its first projects, merged (the
// API lists runs per project).
async function recentRuns(org, projects) {
    const lists = await Promise.all(projects.slice(0, 20).map((p) =>
        api('GET', path`/api/orgs/${org}/projects/${p.slug}/runs` + '?limit=5')
            .then((page) => page.data)));
    return lists.flat().sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).slice(0, 10);
}

function runItem(org, r) {
    return h('li', {},
             badge(r.status), ' ',
             h('a', { href: path`/orgs/${org}/projects/${r.project}/runs/${r.id}` },
               firstLine(r.instructions)), ' ',
             h('span', { class: 'muted' }, `${r.project} · ${when(r.created_at)}`));
}

export async function orgPage(main, me, org) {
    const [o, projects] = await Promise.all([
        api('GET', path`/api/orgs/${org}`),
        api('GET', path`/api/orgs/${org}/projects` + '?archived=false&limit=200'),
    ]);
    document.title = `${o.name} · mod_svc`;
    main.append(h('h1', {}, o.name),
                h('p', {}, h('a', { href: path`/orgs/${org}/providers` }, 'Model providers')));
    const list = h('ul', { class: 'list', id: 'projects' });
    main.append(h('h2', {}, 'Projects'), list);
    if (!projects.data.length) {
        list.append(h('li', { class: 'muted' }, 'No projects yet.'));
    }
    for (const p of projects.data) {
        list.append(h('li', {}, h('a', { href: path`/orgs/${org}/projects/${p.slug}` }, p.name),
                      ' ', h('span', { class: 'muted' }, p.slug)));
    }
    const slug = h('input', { name: 'slug', required: true, maxlength: 63, autocomplete: 'off' });
    const name = h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    main.append(h('h2', {}, 'New project'),
                h('form', { class: 'inline', id: 'new-project', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const p = await api('POST', path`/api/orgs/${org}/projects`,
                                            { slug: slug.value, name: name.value });
                        location.assign(path`/orgs/${org}/projects/${p.slug}`);
                    });
                } },
                  h('label', {}, 'Slug', slug), h('label', {}, 'Name', name),
                  h('button', { type: 'submit' }, 'Create project')));
    const runs = h('ul', { class: 'list', id: 'recent-runs' });
    main.append(h('h2', {}, 'Recent runs'), runs);
    const recent = await recentRuns(org, projects.data);
    if (!recent.length) {
        runs.append(h('li', { class: 'muted' }, 'No runs yet.'));
    }
    runs.append(...recent.map((r) => runItem(org, r)));
}

export async function projectPage(main, me, org, project) {
    const [p, runs] = await Promise.all([
        api('GET', path`/api/orgs/${org}/projects/${project}`),
        api('GET', path`/api/orgs/${org}/projects/${project}/runs` + '?limit=50'),
    ]);
    document.title = `${p.name} · mod_svc`;
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, p.name),
                h('p', {}, h('a', { href: path`/orgs/${org}/projects/${project}/products` },
                             'Planning documents')));
    if (p.description) {
        main.append(h('p', {}, p.description));
    }
    const instructions = h('textarea', { name: 'instructions', required: true, maxlength: 65536 });
    const start = h('button', { type: 'submit' }, 'Start run');
    main.append(h('h2', {}, 'Start a run'),
                h('form', { class: 'stack', id: 'new-run', onsubmit: (ev) => {
                    ev.preventDefault();
                    start.disabled = true;
                    act(async () => {
                        // One key per click: a retried request makes one run.
                        const r = await api('POST', path`/api/orgs/${org}/projects/${project}/runs`,
                                            { instructions: instructions.value },
                                            { idempotencyKey: crypto.randomUUID() });
                        location.assign(path`/orgs/${org}/projects/${project}/runs/${r.id}`);
                    }).finally(() => { start.disabled = false; });
                } },
                  h('label', {}, 'Instructions', instructions), h('div', {}, start)));
    const list = h('ul', { class: 'list', id: 'runs' });
    main.append(h('h2', {}, 'Runs'), list);
    if (!runs.data.length) {
        list.append(h('li', { class: 'muted' }, 'No runs yet.'));
    }
    list.append(...runs.data.map((r) => runItem(org, r)));
}
