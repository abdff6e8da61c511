// Personal access tokens: the list, a new one (its secret shown once,
// with a copy button), revoking.
import { api, path } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showStatus, secretBox } from './page.js';

export async function tokensPage(main, me) {
    document.title = 'Access tokens · mod_svc';
    const list = h('ul', { class: 'list', id: 'tokens' });
    const created = h('div', { id: 'new-token-secret' });
    const name = h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off' });
    const scope = h('select', { name: 'scope' },
                    ['read', 'write', 'admin'].map((s) => h('option', { value: s }, s)));
    const org = h('select', { name: 'org' }, h('option', { value: '' }, 'Any (not bound)'),
                  me.orgs.map((o) => h('option', { value: o.slug }, o.name)));
    const days = h('input', { name: 'expires_in_days', type: 'number', min: 1, max: 365,
                              inputmode: 'numeric' });

    async function refresh() {
        const page = await api('GET', '/api/me/tokens?limit=200');
        clear(list);
        if (!page.data.length) {
            list.append(h('li', { class: 'muted' }, 'No tokens yet.'));
        }
        for (const t of page.data) {
            const revoke = t.status === 'active'
                ? h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${t.name}`,
                                onclick: () => act(async () => {
                                    await api('DELETE', path`/api/me/tokens/${t.id}`);
                                    showStatus(`Token ${t.name} revoked.`);
                                    await refresh();
                                }) }, 'Revoke')
                : null;
            list.append(h('li', { 'data-token-id': t.id },
                          h('strong', { class: 'token-name' }, t.name), ' ', badge(t.status), ' ',
                          h('code', {}, `${t.prefix}…`), ' ',
                          h('span', { class: 'muted' },
                            `${t.scope}${t.org ? ' · ' + t.org.slug : ''} · created ${when(t.created_at)}`
                            + (t.expires_at ? ` · expires ${when(t.expires_at)}` : '')
                            + (t.last_used_at ? ` · last used ${when(t.last_used_at)}` : '')),
                          ' ', revoke));
        }
    }

    main.append(h('h1', {}, 'Personal access tokens'),
                h('p', { class: 'muted' }, 'Programs use these instead of signing in: send one as ',
                  h('code', {}, 'Authorization: Bearer <token>'), '.'),
                h('h2', {}, 'New token'),
                h('form', { class: 'inline', id: 'new-token', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const body = { name: name.value, scope: scope.value };
                        if (org.value) {
                            body.org = org.value;
                        }
                        if (days.value) {
                            body.expires_in_days = Number(days.value);
                        }
                        const t = await api('POST', '/api/me/tokens', body);
                        showSecret(t);
                        name.value = '';
                        await refresh();
                    });
                } },
                  h('label', {}, 'Name', name), h('label', {}, 'Scope', scope),
                  h('label', {}, 'Organization', org), h('label', {}, 'Expires in days', days),
                  h('button', { type: 'submit' }, 'Create token')),
                created,
                h('h2', {}, 'Your tokens'), list);

    // The secret exists in this page only: it is never shown again.
    function showSecret(t) {
        clear(created).append(
            h('h2', {}, `Token ${t.name} created`),
            h('p', {}, 'Copy it now: this is the only time it is shown.'),
            secretBox(t.token, { code: 'token-secret', copy: 'copy-token' }));
    }

    await refresh();
}
