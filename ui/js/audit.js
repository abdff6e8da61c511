// An org's audit log (docs/api/tenancy.md): newest first, the filters the
// API offers (action, actor, since, until), and cursor paging ("Older").
// Actors are shown by their names (the entry's actor.name, which names
// people who left too), as text.
import { api, path } from './api.js';
import { h, clear, when } from './dom.js';
import { act } from './page.js';

export async function auditPage(main, me, org) {
    const [o, members] = await Promise.all([
        api('GET', path`/api/orgs/${org}`),
        api('GET', path`/api/orgs/${org}/members` + '?limit=200'),
    ]);
    document.title = `Audit log · ${o.name} · mod_svc`;
    const names = new Map(members.data.map((m) => [m.user_id, m.name || m.email]));
    const q = new URLSearchParams(location.search);
    const action = h('input', { name: 'action', value: q.get('action') || '', autocomplete: 'off',
                                placeholder: 'member.role_changed' });
    const actor = h('select', { name: 'actor' }, h('option', { value: '' }, 'Anyone'),
                    members.data.map((m) => h('option', { value: m.user_id,
                                                          selected: m.user_id === q.get('actor') },
                                              m.name || m.email)));
    const since = h('input', { name: 'since', type: 'datetime-local', value: q.get('since') || '' });
    const until = h('input', { name: 'until', type: 'datetime-local', value: q.get('until') || '' });
    const list = h('ol', { class: 'list', id: 'audit' });
    const more = h('button', { type: 'button', class: 'secondary', id: 'audit-more', hidden: true },
                   'Older entries');
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Audit log'),
                h('form', { class: 'inline', id: 'audit-filter', onsubmit: (ev) => {
                    ev.preventDefault();
                    // The filters live in the address: a filtered view can be linked.
                    const p = new URLSearchParams(q.get('limit') ? { limit: q.get('limit') } : {});
                    for (const [k, el] of [['action', action], ['actor', actor], ['since', since],
                                           ['until', until]]) {
                        if (el.value) {
                            p.set(k, el.value);
                        }
                    }
                    history.replaceState(null, '', location.pathname + (p.size ? '?' + p : ''));
                    act(() => load(null));
                } },
                  h('label', {}, 'Action', action), h('label', {}, 'Actor', actor),
                  h('label', {}, 'Since', since), h('label', {}, 'Until', until),
                  h('button', { type: 'submit' }, 'Filter')),
                list, h('p', {}, more));

    // datetime-local is the browser's local time without a zone; the API
    // takes RFC 3339.
    const rfc3339 = (v) => new Date(v).toISOString();

    function actorName(a) {
        if (!a || a.kind !== 'user') {
            return a ? a.kind : 'the service';
        }
        return a.name || names.get(a.user_id) || a.user_id;
    }

    async function load(cursor) {
        const p = new URLSearchParams({ limit: q.get('limit') || '50' });
        if (action.value) {
            p.set('action', action.value);
        }
        if (actor.value) {
            p.set('actor', actor.value);
        }
        if (since.value) {
            p.set('since', rfc3339(since.value));
        }
        if (until.value) {
            p.set('until', rfc3339(until.value));
        }
        if (cursor) {
            p.set('cursor', cursor);
        }
        const page = await api('GET', path`/api/orgs/${org}/audit` + '?' + p);
        if (!cursor) {
            clear(list);
            if (!page.data.length) {
                list.append(h('li', { class: 'muted' }, 'No entries.'));
            }
        }
        for (const e of page.data) {
            list.append(h('li', { 'data-audit-id': e.id },
                h('code', { class: 'audit-action' }, e.action), ' ',
                h('span', { class: 'audit-actor' }, actorName(e.actor)), ' ',
                h('span', { class: 'muted' }, `${when(e.created_at)}`
                  + (e.target ? ` · ${e.target.type} ${e.target.id}` : '')
                  + (e.request_id ? ` · ${e.request_id}` : '')),
                e.data && Object.keys(e.data).length
                    ? h('details', {}, h('summary', {}, 'Details'),
                        h('pre', { class: 'log' }, JSON.stringify(e.data, null, 2)))
                    : null));
        }
        more.hidden = !page.next_cursor;
        more.onclick = () => act(() => load(page.next_cursor));
    }
    await load(null);
}
