// An org's members and invites, and a project's team (docs/api/tenancy.md).
// The controls follow the rules the API enforces (admins and the owner
// manage members; nobody changes or removes the owner); a refusal shows
// the server's problem all the same.
import { api, path } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showStatus } from './page.js';

const ORG_ROLES = ['admin', 'member', 'viewer'];
const TEAM_ROLES = ['viewer', 'developer', 'maintainer'];

function roleSelect(roles, value, label) {
    return h('select', { 'aria-label': label },
             roles.map((r) => h('option', { value: r, selected: r === value }, r)));
}

function inviteItem(i, revoke) {
    return h('li', { 'data-invite-id': i.id },
             h('strong', {}, i.email), ' ', badge(i.status), ' ',
             h('span', { class: 'muted' }, `${i.role} · by ${i.invited_by ? i.invited_by.name
                 || i.invited_by.email : '?'} · expires ${when(i.expires_at)}`), ' ',
             h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke the invite of ${i.email}`,
                           onclick: revoke }, 'Revoke'));
}

function inviteForm(id, roles, onInvite) {
    const email = h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off' });
    const role = h('select', { name: 'role' }, roles.map((r) => h('option', { value: r }, r)));
    return h('form', { class: 'inline', id, onsubmit: (ev) => {
        ev.preventDefault();
        act(async () => {
            await onInvite({ email: email.value, role: role.value });
            email.value = '';
        });
    } }, h('label', {}, 'Email', email), h('label', {}, 'Role', role),
      h('button', { type: 'submit' }, 'Invite'));
}

export async function membersPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    const manage = o.role === 'owner' || o.role === 'admin';
    document.title = `Members · ${o.name} · mod_svc`;
    const list = h('ul', { class: 'list', id: 'members' });
    const invites = h('ul', { class: 'list', id: 'invites' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, `Members of ${o.name}`), list);

    async function refresh() {
        const page = await api('GET', path`/api/orgs/${org}/members` + '?limit=200');
        clear(list);
        for (const m of page.data) {
            const role = roleSelect(ORG_ROLES, m.role, `Role of ${m.name || m.email}`);
            const controls = manage && m.role !== 'owner' ? [
                ' ', role, ' ',
                h('button', { type: 'button', class: 'secondary',
                              'aria-label': `Change role of ${m.name || m.email}`,
                              onclick: () => act(async () => {
                                  await api('PATCH', path`/api/orgs/${org}/members/${m.user_id}`,
                                            { role: role.value });
                                  showStatus(`${m.name || m.email} is now ${role.value}.`);
                                  await refresh();
                              }) }, 'Change role'), ' ',
                h('button', { type: 'button', class: 'danger',
                              'aria-label': `Remove ${m.name || m.email}`,
                              onclick: () => act(async () => {
                                  await api('DELETE', path`/api/orgs/${org}/members/${m.user_id}`);
                                  showStatus(`${m.name || m.email} was removed.`);
                                  await refresh();
                              }) }, 'Remove')] : [' ', badge(m.role)];
            list.append(h('li', { 'data-user-id': m.user_id },
                          h('strong', { class: 'member-name' }, m.name || m.email), ' ',
                          h('span', { class: 'muted' }, `${m.email} · joined ${when(m.joined_at)}`),
                          controls));
        }
        if (manage) {
            clear(invites);
            if (!(page.invites || []).length) {
                invites.append(h('li', { class: 'muted' }, 'No pending invites.'));
            }
            for (const i of page.invites || []) {
                invites.append(inviteItem(i, () => act(async () => {
                    await api('DELETE', path`/api/orgs/${org}/invites/${i.id}`);
                    showStatus(`The invite of ${i.email} was revoked.`);
                    await refresh();
                })));
            }
        }
    }

    if (manage) {
        main.append(h('h2', {}, 'Invite someone'),
                    inviteForm('invite', ORG_ROLES, async (body) => {
                        const i = await api('POST', path`/api/orgs/${org}/members`, body);
                        showStatus(`${i.email} is invited.`);
                        await refresh();
                    }),
                    h('h2', {}, 'Pending invites'), invites);
    }
    main.append(h('p', { class: 'muted' }, 'Teams are per project: ',
                  h('a', { href: path`/orgs/${org}` }, 'open a project'), ', then its team.'));
    await refresh();
}

export async function teamPage(main, me, org, project) {
    const [o, p] = await Promise.all([
        api('GET', path`/api/orgs/${org}`),
        api('GET', path`/api/orgs/${org}/projects/${project}`),
    ]);
    const orgAdmin = o.role === 'owner' || o.role === 'admin';
    document.title = `Team · ${p.name} · mod_svc`;
    const list = h('ul', { class: 'list', id: 'team' });
    const invites = h('ul', { class: 'list', id: 'team-invites' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}/projects/${project}` }, '← Project')),
                h('h1', {}, `Team of ${p.name}`), list);
    const base = path`/api/orgs/${org}/projects/${project}/team`;

    async function refresh() {
        const [team, members] = await Promise.all([
            api('GET', base + '?limit=200'),
            api('GET', path`/api/orgs/${org}/members` + '?limit=200'),
        ]);
        const mine = team.data.find((t) => t.user_id === me.id);
        const manage = orgAdmin || (mine && mine.role === 'maintainer');
        clear(list);
        if (!team.data.length) {
            list.append(h('li', { class: 'muted' }, 'Nobody is on the team yet.'));
        }
        for (const t of team.data) {
            const who = t.name || t.email;
            const role = roleSelect(TEAM_ROLES, t.role, `Team role of ${who}`);
            list.append(h('li', { 'data-user-id': t.user_id },
                h('strong', { class: 'member-name' }, who), ' ',
                h('span', { class: 'muted' }, `${t.email} · org ${t.org_role}`), ' ',
                manage ? [role, ' ', h('button', { type: 'button', class: 'secondary',
                    'aria-label': `Change role of ${who} in the team`,
                    onclick: () => act(async () => {
                        await api('PATCH', `${base}/${encodeURIComponent(t.user_id)}`, { role: role.value });
                        showStatus(`${who} is now ${role.value}.`);
                        await refresh();
                    }) }, 'Change role'), ' '] : badge(t.role),
                manage || t.user_id === me.id ? h('button', { type: 'button', class: 'danger',
                    'aria-label': t.user_id === me.id ? 'Leave the team'
                                                        : `Remove ${who} from the team`,
                    onclick: () => act(async () => {
                        await api('DELETE', `${base}/${encodeURIComponent(t.user_id)}`);
                        showStatus(`${who} left the team.`);
                        await refresh();
                    }) }, t.user_id === me.id ? 'Leave' : 'Remove') : null));
        }
        clear(addBox);
        if (!manage) {
            return;
        }
        const on = new Set(team.data.map((t) => t.user_id));
        const others = members.data.filter((m) => !on.has(m.user_id));
        const who = h('select', { name: 'user_id', required: true },
                      others.map((m) => h('option', { value: m.user_id }, m.name || m.email)));
        const role = h('select', { name: 'role' },
                       TEAM_ROLES.map((r) => h('option', { value: r, selected: r === 'developer' }, r)));
        addBox.append(h('h2', {}, 'Add a member of the org'),
            others.length ? h('form', { class: 'inline', id: 'add-team-member', onsubmit: (ev) => {
                ev.preventDefault();
                act(async () => {
                    const t = await api('POST', base, { user_id: who.value, role: role.value });
                    showStatus(`${t.name || t.email} joined the team.`);
                    await refresh();
                });
            } }, h('label', {}, 'Member', who), h('label', {}, 'Role', role),
              h('button', { type: 'submit' }, 'Add to the team'))
                : h('p', { class: 'muted' }, 'Every member of the org is on the team.'),
            h('h2', {}, 'Invite by email'),
            inviteForm('invite-team', TEAM_ROLES, async (body) => {
                const i = await api('POST', base, body);
                showStatus(`${i.email} is invited to the team.`);
                await refresh();
            }),
            h('h2', {}, 'Pending invites'), invites);
        const pending = await api('GET', base + '/invites?limit=200');
        clear(invites);
        if (!pending.data.length) {
            invites.append(h('li', { class: 'muted' }, 'No pending invites.'));
        }
        invites.append(...pending.data.map((i) => inviteItem(i, () => act(async () => {
            await api('DELETE', `${base}/invites/${encodeURIComponent(i.id)}`);
            showStatus(`The invite of ${i.email} was revoked.`);
            await refresh();
        }))));
    }
    const addBox = h('div', { id: 'team-admin' });
    main.append(addBox);
    await refresh();
}
