// The share portal (/share/:token): people without an account read a
// product's documents through a share link and comment on them. The token
// in the path is the credential; the page is served with
// Referrer-Policy: no-referrer and the access log masks it (docs/ui.md).
// Under each document, the comments left through this link (by anyone
// holding it), newest first, and a form to add one.
import { api, path } from './api.js';
import { h, when, badge, clear } from './dom.js';
import { act, showStatus } from './page.js';
import { markdown } from './markdown.js';

function commentItem(c) {
    return h('li', { 'data-comment-id': c.id }, h('strong', {}, c.author_name), ' ',
             h('span', { class: 'muted' }, when(c.created_at)),
             h('p', { class: 'comment-body' }, c.body));
}

// The document's comments through this link, a page at a time: the list,
// and "Older comments" while there are more.
async function comments(token, docId) {
    const list = h('ul', { class: 'list comments' });
    const more = h('p', {});
    const page = async (cursor) => {
        const q = `?document_id=${encodeURIComponent(docId)}&limit=20`
            + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
        const r = await api('GET', path`/api/share/${token}/comments` + q);
        list.append(...r.data.map(commentItem));
        clear(more);
        if (r.next_cursor) {
            more.append(h('button', { type: 'button', class: 'secondary', onclick: (ev) => {
                ev.target.disabled = true;
                act(() => page(r.next_cursor));
            } }, 'Older comments'));
        }
        if (!list.firstChild) {
            list.append(h('li', { class: 'muted none' }, 'No comments yet.'));
        }
    };
    await page(null);
    return { list, more, add: (c) => {
        list.querySelector('.none')?.remove();
        list.prepend(commentItem(c));
    } };
}

export async function sharePage(main, token) {
    document.title = 'Shared documents · mod_svc';
    const share = await api('GET', path`/api/share/${token}`);
    document.title = `${share.product.name} · shared · mod_svc`;
    main.append(h('h1', {}, share.product.name),
                h('p', { class: 'muted' }, `Shared for review until ${when(share.expires_at)}. `,
                  'Each document is shown at its approved version, or its current one where none ',
                  'is approved yet.'));
    const nav = h('ol', { id: 'shared-toc' });
    main.append(h('nav', { 'aria-label': 'Documents' }, nav));
    const name = h('input', { name: 'author_name', required: true, maxlength: 100,
                              autocomplete: 'name' });
    for (const [i, d] of share.documents.entries()) {
        const id = `doc-${i + 1}`;
        nav.append(h('li', {}, h('a', { href: `#${id}` }, d.title)));
        const body = await api('GET', path`/api/share/${token}/documents/${d.id}`, undefined,
                               { text: true });
        const thread = await comments(token, d.id);
        const text = h('textarea', { name: 'body', required: true, maxlength: 10000 });
        const send = h('button', { type: 'submit' }, 'Add comment');
        main.append(h('article', { class: 'shared-doc', id, 'data-document-id': d.id,
                                   'aria-labelledby': `${id}-h` },
            h('h2', { id: `${id}-h` }, d.title),
            h('p', { class: 'muted' }, `Version ${d.version_number} `,
              badge(d.approved ? 'approved' : 'draft'), ` · ${when(d.updated_at)}`),
            markdown(body),
            h('h3', {}, 'Comments'),
            thread.list, thread.more,
            h('form', { class: 'stack comment-form', onsubmit: (ev) => {
                ev.preventDefault();
                send.disabled = true;
                act(async () => {
                    const c = await api('POST', path`/api/share/${token}/comments`,
                                        { document_id: d.id, author_name: name.value,
                                          body: text.value });
                    text.value = '';
                    thread.add(c);
                    showStatus('Your comment was sent.');
                }).finally(() => { send.disabled = false; });
            } }, h('label', {}, 'Your comment', text), h('div', {}, send))));
    }
    // One name for all of the page's comments, above the documents.
    nav.after(h('p', {}, h('label', {}, 'Your name (shown with your comments)', name)));
}
