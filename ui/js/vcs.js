// The code-hosting App in an org (docs/api/vcs.md): its installations
// (unlink), the link to the server's install route (/orgs/:slug/vcs/install,
// a redirect to the provider, not a page of the UI), and each project's
// repository link.
import { api, path, Problem } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showStatus } from './page.js';

export async function vcsPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    const admin = o.role === 'owner' || o.role === 'admin';
    document.title = `Code hosting · ${o.name} · mod_svc`;
    const insts = h('ul', { class: 'list', id: 'installations' });
    const links = h('ul', { class: 'list', id: 'repo-links' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Code hosting'),
                h('p', {}, 'The App reads and writes the repositories of the accounts it is '
                  + 'installed on. Installing it happens at the provider, which sends you back here.'),
                admin ? h('p', {}, h('a', { class: 'button', id: 'install',
                                            href: path`/orgs/${org}/vcs/install` },
                                     'Install the App on an account')) : null,
                h('h2', {}, 'Installations'), insts,
                h('h2', {}, 'Project repositories'), links);

    async function refresh() {
        const [page, projects, repos] = await Promise.all([
            api('GET', path`/api/orgs/${org}/vcs/installations` + '?limit=200'),
            api('GET', path`/api/orgs/${org}/projects` + '?archived=false&limit=200'),
            // Asks the provider: a failure there leaves the rest of the page.
            api('GET', path`/api/orgs/${org}/vcs/repositories`).catch((e) => e),
        ]);
        clear(insts);
        if (!page.data.length) {
            insts.append(h('li', { class: 'muted' }, 'The App is not installed for this organization.'));
        }
        for (const i of page.data) {
            const unlink = admin && i.status !== 'unlinked'
                ? h('button', { type: 'button', class: 'danger',
                                'aria-label': `Unlink the installation on ${i.account.login}`,
                                onclick: () => act(async () => {
                                    const r = await api('DELETE',
                                        path`/api/orgs/${org}/vcs/installations/${i.installation_id}`);
                                    showStatus(r.detail || 'Unlinked.');
                                    await refresh();
                                }) }, 'Unlink')
                : null;
            insts.append(h('li', { 'data-installation-id': i.installation_id },
                h('strong', {}, i.account.login), ' ', badge(i.status), ' ',
                h('span', { class: 'muted' }, `${i.account.type} · ${i.repository_selection} `
                  + `repositories · installation ${i.installation_id} · ${when(i.created_at)}`), ' ',
                unlink,
                (i.repositories || []).length
                    ? h('ul', { class: 'runs' }, i.repositories.map((r) => h('li', {}, r.full_name,
                        r.private ? h('span', { class: 'muted' }, ' (private)') : null)))
                    : null));
        }

        const reachable = repos instanceof Problem ? [] : repos.data;
        const current = await Promise.all(projects.data.map((p) =>
            api('GET', path`/api/orgs/${org}/projects/${p.slug}/repository`)
                .then((x) => x.repository)));
        clear(links);
        if (repos instanceof Problem) {
            links.append(h('li', { class: 'muted' },
                           `The provider's repositories could not be listed: ${repos.detail || repos.message}`));
        }
        if (!projects.data.length) {
            links.append(h('li', { class: 'muted' }, 'No projects yet.'));
        }
        projects.data.forEach((p, n) => {
            const r = current[n];
            const base = path`/api/orgs/${org}/projects/${p.slug}/repository`;
            const item = h('li', { 'data-project': p.slug }, h('strong', {}, p.name), ' ');
            if (r) {
                item.append(h('code', { class: 'repo' }, r.full_name), ' ', badge(r.installation_status),
                    ' ', h('span', { class: 'muted' }, `${r.default_branch || ''} · linked ${when(r.linked_at)}`),
                    ' ', h('button', { type: 'button', class: 'danger',
                                       'aria-label': `Unlink the repository of ${p.name}`,
                                       onclick: () => act(async () => {
                                           await api('DELETE', base);
                                           showStatus(`${p.name} has no repository now.`);
                                           await refresh();
                                       }) }, 'Unlink'));
            } else if (reachable.length) {
                const pick = h('select', { 'aria-label': `Repository for ${p.name}` },
                               reachable.map((x, k) => h('option', { value: k }, x.full_name)));
                item.append(h('span', { class: 'muted' }, 'no repository '),
                    h('form', { class: 'inline link-repo', onsubmit: (ev) => {
                        ev.preventDefault();
                        const x = reachable[Number(pick.value)];
                        act(async () => {
                            await api('PUT', base, { installation_id: x.installation_id,
                                                     full_name: x.full_name });
                            showStatus(`${p.name} is linked to ${x.full_name}.`);
                            await refresh();
                        });
                    } }, pick, h('button', { type: 'submit', 'aria-label': `Link a repository to ${p.name}` },
                                 'Link')));
            } else {
                item.append(h('span', { class: 'muted' }, 'no repository'));
            }
            links.append(item);
        });
    }
    await refresh();
}
