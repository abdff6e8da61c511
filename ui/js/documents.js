// Planning documents: a project's products, a product's documents and its
// share links, and a document (its text rendered from Markdown, versions
// and the diff between any two, approve / request changes, edit with the
// conflict case, regenerate, patches, comments).
import { api, path, Problem } from './api.js';
import { h, clear, when, badge } from './dom.js';
import { act, showProblem, showStatus } from './page.js';
import { showMarkdown } from './markdown.js';
import { diffView, unifiedView } from './diff.js';

const content = (org, versionId) =>
    api('GET', path`/api/orgs/${org}/doc-versions/${versionId}/content`, undefined, { text: true });

function author(v) {
    const a = v.author || {};
    return a.kind === 'ai' ? `${a.model || 'the model'} (for ${a.name || 'someone'})` : (a.name || 'someone');
}

// Reads the first page of one of the API's lists into a list element: an
// item each, or a line saying there is none.
async function fillList(list, url, empty, item) {
    const page = await api('GET', url);
    clear(list).append(...(page.data.length ? page.data.map(item)
                                            : [h('li', { class: 'muted' }, empty)]));
}

function versionLabel(v) {
    return `v${v.number} · ${v.status} · ${v.source} by ${author(v)} · ${when(v.created_at)}`;
}

// --- a project's products ------------------------------------------------------------------

export async function productsPage(main, me, org, project) {
    const p = await api('GET', path`/api/orgs/${org}/projects/${project}`);
    document.title = `Planning · ${p.name} · mod_svc`;
    const list = h('ul', { class: 'list', id: 'products' });
    const name = h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}/projects/${project}` }, '← Project')),
                h('h1', {}, `Planning: ${p.name}`),
                h('h2', {}, 'Products'), list,
                h('h2', {}, 'New product'),
                h('form', { class: 'inline', id: 'new-product', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const prd = await api('POST', path`/api/orgs/${org}/projects/${project}/products`,
                                              { name: name.value });
                        location.assign(path`/orgs/${org}/products/${prd.id}`);
                    });
                } }, h('label', {}, 'Name', name), h('button', { type: 'submit' }, 'Create product')));
    await fillList(list, path`/api/orgs/${org}/projects/${project}/products` + '?limit=100',
                   'No products yet.', (d) =>
        h('li', {}, h('a', { href: path`/orgs/${org}/products/${d.id}` }, d.name), ' ',
          h('span', { class: 'muted' }, `${d.documents} documents · ${when(d.updated_at)}`)));
}

// --- a product: its documents and share links -----------------------------------------------

function sharesSection(org, productId) {
    const list = h('ul', { class: 'list', id: 'shares' });
    const created = h('div', { id: 'new-share-link' });
    const days = h('input', { name: 'expires_in_days', type: 'number', min: 1, max: 365, value: 30,
                              inputmode: 'numeric' });
    async function refresh() {
        await fillList(list, path`/api/orgs/${org}/products/${productId}/shares` + '?limit=100',
                       'No share links.', (s) => {
            const revoke = s.status === 'active'
                ? h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${s.token_hint}…`,
                                onclick: () => act(async () => {
                                    await api('POST', path`/api/orgs/${org}/shares/${s.id}/revoke`);
                                    await refresh();
                                    showStatus('Share link revoked.');
                                }) }, 'Revoke')
                : null;
            return h('li', { 'data-share-id': s.id }, h('code', {}, `${s.token_hint}…`), ' ',
                     badge(s.status), ' ',
                     h('span', { class: 'muted' }, `created ${when(s.created_at)} · expires `
                       + when(s.expires_at)), ' ', revoke);
        });
    }
    const section = h('section', { 'aria-labelledby': 'shares-h' },
        h('h2', { id: 'shares-h' }, 'Share links'),
        h('p', { class: 'muted' }, 'Anyone holding a link reads the approved versions (or the ',
          'current ones) and comments, without an account. The link is shown once.'),
        h('form', { class: 'inline', id: 'new-share', onsubmit: (ev) => {
            ev.preventDefault();
            act(async () => {
                const s = await api('POST', path`/api/orgs/${org}/products/${productId}/shares`,
                                    { expires_in_days: Number(days.value) });
                clear(created).append(h('p', {}, 'Copy the link now: it is not shown again. ',
                                        h('a', { id: 'share-url', href: s.url, rel: 'noreferrer' },
                                          s.url)));
                await refresh();
            });
        } }, h('label', {}, 'Expires in days', days),
          h('button', { type: 'submit' }, 'Create share link')),
        created, list);
    return { section, refresh };
}

export async function productPage(main, me, org, productId) {
    const prd = await api('GET', path`/api/orgs/${org}/products/${productId}`);
    document.title = `${prd.name} · mod_svc`;
    const list = h('ul', { class: 'list', id: 'documents' });
    const kind = h('select', { name: 'kind' }, h('option', { value: 'section' }, 'Section'),
                   h('option', { value: 'toc' }, 'Table of contents'));
    const title = h('input', { name: 'title', required: true, maxlength: 200, autocomplete: 'off' });
    const body = h('textarea', { name: 'body', required: true });
    const shares = sharesSection(org, productId);
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}/projects/${prd.project.slug}/products` },
                             '← Planning')),
                h('h1', {}, prd.name),
                h('h2', {}, 'Documents'), list,
                h('h2', {}, 'New document'),
                h('form', { class: 'stack', id: 'new-document', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const d = await api('POST', path`/api/orgs/${org}/products/${productId}/documents`,
                                            { kind: kind.value, title: title.value, body: body.value });
                        location.assign(path`/orgs/${org}/documents/${d.id}`);
                    });
                } },
                  h('label', {}, 'Kind', kind), h('label', {}, 'Title', title),
                  h('label', {}, 'Text (Markdown)', body),
                  h('div', {}, h('button', { type: 'submit' }, 'Create document'))),
                shares.section);
    const page = await api('GET', path`/api/orgs/${org}/products/${productId}/documents` + '?limit=100');
    // The table of contents first, then the sections as the API lists them.
    const docs = [...page.data].sort((a, b) => (a.kind === 'toc' ? -1 : 0) - (b.kind === 'toc' ? -1 : 0));
    if (!docs.length) {
        list.append(h('li', { class: 'muted' }, 'No documents yet.'));
    }
    list.append(...docs.map((d) =>
        h('li', {}, h('a', { href: path`/orgs/${org}/documents/${d.id}` }, d.title), ' ',
          h('span', { class: 'muted' }, d.kind === 'toc' ? 'table of contents · ' : ''),
          badge(d.current_version.status), ' ',
          h('span', { class: 'muted' }, `v${d.current_version.number} · ${when(d.updated_at)}`))));
    await shares.refresh();
}

// --- a document ---------------------------------------------------------------------------------

export async function documentPage(main, me, org, docId) {
    let doc = null;
    let text = '';
    // The version the editor's text was made from: the edit's precondition.
    let editBase = null;
    let dirty = false;

    const title = h('h1', {});
    const back = h('p', {});
    const facts = h('p', { class: 'muted', id: 'doc-facts' });
    const bodyView = h('div', { class: 'markdown', id: 'doc-body' });
    const decide = h('div', { id: 'decide' });
    const editor = h('textarea', { name: 'body', id: 'edit-body', class: 'editor',
                                   oninput: () => { dirty = true; } });
    const conflict = h('div', { id: 'edit-conflict', role: 'alert' });
    const save = h('button', { type: 'submit' }, 'Save as a new version');
    const versions = h('ol', { class: 'list', id: 'versions', reversed: true });
    const from = h('select', { name: 'from', id: 'diff-from' });
    const to = h('select', { name: 'to', id: 'diff-to' });
    const diffOut = h('div', { id: 'diff' });
    const patches = h('ul', { class: 'list', id: 'patches' });
    const comments = h('ul', { class: 'list', id: 'comments' });
    const regenInstr = h('input', { name: 'instructions', maxlength: 10000, autocomplete: 'off' });
    const patchInstr = h('input', { name: 'instructions', required: true, maxlength: 10000,
                                    autocomplete: 'off' });
    const regenerate = h('button', { type: 'submit' }, 'Regenerate');
    const propose = h('button', { type: 'submit' }, 'Propose a patch');

    function fillEditor() {
        editor.value = text;
        editBase = doc.current_version.id;
        dirty = false;
    }

    function renderDecide() {
        clear(decide);
        const cur = doc.current_version;
        if (cur.status !== 'draft') {
            decide.append(h('p', {}, `Version ${cur.number} is ${cur.status.replace('_', ' ')}`,
                            cur.comment ? `: ${cur.comment}` : '.'));
            return;
        }
        const comment = h('textarea', { name: 'comment', required: true, maxlength: 10000 });
        decide.append(
            h('p', {}, h('button', { type: 'button', id: 'approve', onclick: () => act(async () => {
                await api('POST', path`/api/orgs/${org}/doc-versions/${cur.id}/approve`);
                await load();
                showStatus(`Version ${cur.number} approved.`);
            }) }, `Approve version ${cur.number}`)),
            h('form', { class: 'stack', id: 'request-changes', onsubmit: (ev) => {
                ev.preventDefault();
                act(async () => {
                    await api('POST', path`/api/orgs/${org}/doc-versions/${cur.id}/request-changes`,
                              { comment: comment.value });
                    await load();
                    showStatus(`Changes requested on version ${cur.number}.`);
                });
            } }, h('label', {}, 'What should change', comment),
              h('div', {}, h('button', { type: 'submit', class: 'secondary' }, 'Request changes'))));
    }

    function renderVersions() {
        clear(versions);
        versions.append(...doc.versions.map((v) =>
            h('li', { 'data-version-id': v.id }, badge(v.status), ' ', versionLabel(v),
              v.id === doc.approved_version_id ? h('strong', {}, ' · the approved version') : null,
              v.comment ? h('div', { class: 'muted' }, `Changes requested: ${v.comment}`) : null)));
        const keepFrom = from.value, keepTo = to.value;
        for (const [sel, keep, dflt] of [[from, keepFrom, doc.versions[1] || doc.versions[0]],
                                         [to, keepTo, doc.versions[0]]]) {
            clear(sel).append(...doc.versions.map((v) =>
                h('option', { value: v.id, selected: v.id === (keep || dflt.id) }, `v${v.number}`)));
        }
    }

    async function renderPatches() {
        await fillList(patches, path`/api/orgs/${org}/documents/${docId}/patches` + '?limit=50',
                       'No patches.', (p) => {
            const decideBtn = (verb, cls) => h('button', {
                type: 'button', class: cls, 'aria-label': `${verb} the patch: ${p.summary}`,
                onclick: () => act(async () => {
                    await api('POST', path`/api/orgs/${org}/patches/${p.id}/${verb.toLowerCase()}`);
                    await load();
                    showStatus(`Patch ${verb === 'Accept' ? 'accepted' : 'rejected'}.`);
                }) }, verb);
            return h('li', { 'data-patch-id': p.id }, badge(p.status), ' ',
                     h('strong', {}, p.summary), ' ',
                     h('span', { class: 'muted' }, `${p.model} · ${when(p.created_at)}`),
                     unifiedView(p.diff),
                     p.status === 'proposed'
                         ? h('p', {}, decideBtn('Accept', ''), ' ', decideBtn('Reject', 'danger'))
                         : null);
        });
    }

    async function renderComments() {
        const number = new Map(doc.versions.map((v) => [v.id, v.number]));
        await fillList(comments, path`/api/orgs/${org}/documents/${docId}/comments` + '?limit=100',
                       'No comments.', (c) =>
            h('li', { 'data-comment-id': c.id }, h('strong', {}, c.author_name), ' ',
              h('span', { class: 'muted' },
                `on v${number.get(c.version_id) ?? '?'} · ${when(c.created_at)}`),
              h('p', { class: 'comment-body' }, c.body)));
    }

    // Reads the document again and shows it; the editor keeps its text
    // unless it was never changed.
    async function load() {
        doc = await api('GET', path`/api/orgs/${org}/documents/${docId}`);
        text = await content(org, doc.current_version.id);
        document.title = `${doc.title} · mod_svc`;
        title.textContent = doc.title;
        const prd = await api('GET', path`/api/orgs/${org}/products/${doc.product_id}`);
        clear(back).append(h('a', { href: path`/orgs/${org}/products/${prd.id}` }, `← ${prd.name}`));
        const cur = doc.current_version;
        clear(facts).append(doc.kind === 'toc' ? 'Table of contents · ' : 'Section · ',
                            `version ${cur.number} `, badge(cur.status),
                            ` · ${doc.versions_total} versions`,
                            doc.approved_version_id ? '' : ' · none approved yet');
        showMarkdown(bodyView, text);
        if (!dirty || editBase === null) {
            fillEditor();
        }
        renderDecide();
        renderVersions();
        await Promise.all([renderPatches(), renderComments()]);
    }

    // Writes the editor's text as a new version from editBase. When someone
    // else wrote one meanwhile (409 conflict), the text stays in the editor,
    // the page shows the newer version and how the text differs from it,
    // and the next save builds on that version.
    async function saveEdit() {
        clear(conflict);
        try {
            const v = await api('POST', path`/api/orgs/${org}/documents/${docId}/edit`,
                                { body: editor.value, base_version_id: editBase });
            dirty = false;
            await load();
            showStatus(`Saved as version ${v.number}.`);
        } catch (e) {
            if (!(e instanceof Problem && e.status === 409)) {
                throw e;
            }
            const mine = editor.value;
            dirty = true;
            await load();
            editor.value = mine;
            editBase = doc.current_version.id;
            conflict.append(
                h('p', {}, `Version ${doc.current_version.number} was saved by `,
                  author(doc.current_version), ' while you were editing: it is shown above. ',
                  'Your text is kept in the editor; here is how it differs from that version. ',
                  'Save again to make your text the next version.'),
                diffView(text, mine, { 'aria-label': 'Your text against the current version' }));
            showProblem(e);
        }
    }

    main.append(back, title, facts,
                h('section', { 'aria-labelledby': 'doc-text-h' },
                  h('h2', { id: 'doc-text-h' }, 'Text'), bodyView),
                h('h2', {}, 'Decision'), decide,
                h('h2', {}, 'Edit'),
                h('form', { class: 'stack', id: 'edit', onsubmit: (ev) => {
                    ev.preventDefault();
                    save.disabled = true;
                    act(saveEdit).finally(() => { save.disabled = false; });
                } }, h('label', {}, 'Text (Markdown)', editor), conflict, h('div', {}, save)),
                h('h2', {}, 'The model'),
                h('form', { class: 'inline', id: 'regenerate', onsubmit: (ev) => {
                    ev.preventDefault();
                    regenerate.disabled = true;
                    act(async () => {
                        showStatus('The model is rewriting the document…');
                        const body = regenInstr.value ? { instructions: regenInstr.value } : {};
                        const v = await api('POST', path`/api/orgs/${org}/documents/${docId}/regenerate`,
                                            body);
                        await load();
                        showStatus(`The model wrote version ${v.number}.`);
                    }).finally(() => { regenerate.disabled = false; });
                } }, h('label', {}, 'Instructions (optional)', regenInstr), regenerate),
                h('form', { class: 'inline', id: 'new-patch', onsubmit: (ev) => {
                    ev.preventDefault();
                    propose.disabled = true;
                    act(async () => {
                        showStatus('The model is writing a patch…');
                        await api('POST', path`/api/orgs/${org}/documents/${docId}/patches`,
                                  { instructions: patchInstr.value });
                        patchInstr.value = '';
                        await renderPatches();
                        showStatus('A patch is proposed.');
                    }).finally(() => { propose.disabled = false; });
                } }, h('label', {}, 'Ask for a patch', patchInstr), propose),
                h('h2', {}, 'Patches'), patches,
                h('h2', {}, 'Versions'), versions,
                h('form', { class: 'inline', id: 'compare', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const [a, b] = await Promise.all([content(org, from.value), content(org, to.value)]);
                        const name = (id) => `v${doc.versions.find((v) => v.id === id)?.number}`;
                        clear(diffOut).append(h('p', { class: 'muted' },
                                                `From ${name(from.value)} to ${name(to.value)}:`),
                                              diffView(a, b));
                    });
                } }, h('label', {}, 'From', from), h('label', {}, 'To', to),
                  h('button', { type: 'submit', class: 'secondary' }, 'Compare')),
                diffOut,
                h('h2', {}, 'Comments'),
                h('p', { class: 'muted' }, 'Reviewers comment through share links (on the product\'s page).'),
                comments);
    await load();
}
