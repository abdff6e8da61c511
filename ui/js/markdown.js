// Markdown, the one way the UI shows markup from a user: marked turns it
// into HTML (HTML written in it stays text), DOMPurify takes out everything that could run or load (script,
// event handlers, javascript: links, forms, styles) and hands back nodes,
// never a string: no code of the UI assigns HTML (docs/ui.md). Both are the
// distribution's copies (libjs-marked, node-dompurify), plain scripts that
// index.html loads before the modules (window.marked, window.DOMPurify).
import { h, append, clear } from './dom.js';

// HTML written into the Markdown is shown as the text it is, not parsed:
// the page's CSP would block its event handlers anyway, but the browser
// still reports each one it meets while DOMPurify parses the string, and
// a planning document has no need of raw HTML. DOMPurify still cleans
// what marked makes of the Markdown itself (a javascript: link, say).
function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// No ids on headings: a document's "# Status" must not give a second
// element the id of one of the page's own.
let markedOpts = null;
function markedOptions() {
    if (!markedOpts) {
        const renderer = new window.marked.Renderer();
        renderer.html = (html) => escapeHtml(html);
        markedOpts = { headerIds: false, mangle: false, renderer };
    }
    return markedOpts;
}
const PURIFY = {
    RETURN_DOM_FRAGMENT: true,
    // No inline style (the CSP would refuse it anyway), no forms or media.
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'video',
                  'audio', 'object', 'embed'],
    FORBID_ATTR: ['style'],
};

// Debian 12's node-dompurify (2.4.1+dfsg+~2.4.0-2+deb12u1) has a slip in
// its backport of the nesting-depth fix: sanitize() reads a variable,
// shadowNode, that only exists in another function, so every call with
// markup throws a ReferenceError. Upstream has no such check there (the
// depth is checked node by node, which the package does too): when the
// copy in use fails so, a global of that name with no depth makes that
// one stray line a no-op, as upstream, and nothing else changes.
function repairPurify() {
    if (!window.DOMPurify) {
        return;
    }
    try {
        window.DOMPurify.sanitize('<b>x</b>');
    } catch (e) {
        if (!(e instanceof ReferenceError && /shadowNode/.test(e.message))) {
            throw e;
        }
        window.shadowNode = { __depth: 0 };
    }
}
repairPurify();

// The sanitized nodes of a Markdown text.
export function markdownNodes(text) {
    if (!window.marked || !window.DOMPurify) {
        throw new Error('This text cannot be shown: the server lacks marked or DOMPurify '
                        + '(/ui/vendor/, docs/ui.md).');
    }
    return window.DOMPurify.sanitize(window.marked.parse(String(text ?? ''), markedOptions()), PURIFY);
}

// Replaces el's children with the rendered text.
export function showMarkdown(el, text) {
    clear(el).append(markdownNodes(text));
    return el;
}

// A rendered block (class "markdown").
export function markdown(text, attrs = {}) {
    return append(h('div', { class: 'markdown', ...attrs }), [markdownNodes(text)]);
}
