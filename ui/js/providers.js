// An organization's model providers: the list, a new one (its key is
// write-only: never shown again), testing one, choosing the default.
import { api, path } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showStatus } from './page.js';

function testResult(r) {
    return h('div', { class: 'test-result', role: 'status' },
             r.ok ? badge('succeeded') : badge('failed'), ' ',
             r.ok ? `Works (${r.latency_ms} ms)` : (r.error || r.error_code || 'Failed'),
             r.models && r.models.length ? h('span', { class: 'muted' },
                                              ` · models: ${r.models.slice(0, 10).join(', ')}`) : null,
             r.tools === true ? ' · tool calling works' : r.tools === false ? ' · no tool calling' : null);
}

export async function providersPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    document.title = `Model providers · ${o.name} · mod_svc`;
    const list = h('ul', { class: 'list', id: 'providers' });
    const field = (name, attrs = {}) => h('input', { name, autocomplete: 'off', ...attrs });
    const name = field('name', { required: true, maxlength: 100 });
    const kind = h('select', { name: 'kind' },
                   [['openai', 'OpenAI-compatible'], ['anthropic', 'Anthropic']]
                       .map(([v, t]) => h('option', { value: v }, t)));
    const base = field('base_url', { type: 'url', placeholder: 'https://api.openai.com' });
    const model = field('model', { required: true, maxlength: 200 });
    const key = field('api_key', { type: 'password', required: true, maxlength: 1000 });
    const tools = h('select', { name: 'tools' }, ['auto', 'on', 'off'].map((t) =>
        h('option', { value: t }, t)));

    async function refresh() {
        const page = await api('GET', path`/api/orgs/${org}/providers` + '?limit=100');
        clear(list);
        if (!page.data.length) {
            list.append(h('li', { class: 'muted' }, 'No provider yet: documents and runs need one.'));
        }
        for (const p of page.data) {
            const result = h('div', {});
            const test = h('button', { type: 'button', class: 'secondary',
                                       'aria-label': `Test ${p.name}`, onclick: () => act(async () => {
                test.disabled = true;
                try {
                    clear(result).append(h('span', { class: 'muted' }, 'Testing…'));
                    const r = await api('POST', path`/api/orgs/${org}/providers/${p.id}/test`);
                    clear(result).append(testResult(r));
                } finally {
                    test.disabled = false;
                }
            }) }, 'Test');
            const makeDefault = p.is_default ? null
                : h('button', { type: 'button', class: 'secondary',
                                'aria-label': `Make ${p.name} the default`, onclick: () => act(async () => {
                    await api('POST', path`/api/orgs/${org}/providers/${p.id}/default`);
                    await refresh();
                    showStatus(`${p.name} is the default provider.`);
                }) }, 'Make default');
            list.append(h('li', { 'data-provider-id': p.id },
                          h('strong', {}, p.name), ' ', p.is_default ? badge('default') : null, ' ',
                          h('span', { class: 'muted' },
                            `${p.kind} · ${p.model} · ${p.base_url}`
                            + (p.key_hint ? ` · key …${p.key_hint}` : '')
                            + ` · tools ${p.tools} · added ${when(p.created_at)}`),
                          ' ', test, ' ', makeDefault, result));
        }
    }

    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Model providers'),
                h('p', { class: 'muted' }, 'The organization\'s own models: the default one writes ',
                  'documents and patches and works in runs. A key is never shown again.'),
                h('h2', {}, 'Providers'), list,
                h('h2', {}, 'New provider'),
                h('form', { class: 'inline', id: 'new-provider', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const body = { name: name.value, kind: kind.value, model: model.value,
                                       api_key: key.value, tools: tools.value };
                        if (base.value) {
                            body.base_url = base.value;
                        }
                        const p = await api('POST', path`/api/orgs/${org}/providers`, body);
                        key.value = '';
                        name.value = '';
                        await refresh();
                        showStatus(`Provider ${p.name} added.`);
                    });
                } },
                  h('label', {}, 'Name', name), h('label', {}, 'Kind', kind),
                  h('label', {}, 'Base URL (optional)', base), h('label', {}, 'Model', model),
                  h('label', {}, 'API key', key), h('label', {}, 'Tools', tools),
                  h('button', { type: 'submit' }, 'Add provider')));
    await refresh();
}
