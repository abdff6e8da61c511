// What every page shares: the problem box and the status line.
import { Problem } from './api.js';
import { h, clear } from './dom.js';

// showProblem(p): a refusal as the server worded it, with its request id
// (what an operator greps the logs for).
export function showProblem(p) {
    const box = document.getElementById('problem');
    clear(box);
    if (!p) {
        box.hidden = true;
        return;
    }
    const detail = p instanceof Problem ? (p.detail || p.message) : String(p.message || p);
    box.append(h('strong', {}, 'Error: '), detail);
    if (p instanceof Problem) {
        for (const e of p.errors) {
            box.append(h('br'), `${e.field}: ${e.message || e.code}`);
        }
        if (p.requestId) {
            box.append(h('br'), h('span', { class: 'request-id' }, 'Request id: ',
                                   h('code', {}, p.requestId)));
        }
    }
    box.hidden = false;
}

export function showStatus(text) {
    document.getElementById('status').textContent = text || '';
}

// act(fn): an action of a page, its refusal shown; the problem box is
// cleared when it starts.
export async function act(fn) {
    showProblem(null);
    try {
        return await fn();
    } catch (e) {
        showProblem(e);
        return undefined;
    }
}


// secretBox(value, ids): a secret shown once (a token, an enrollment key),
// with a Copy button (the clipboard; where the browser refuses it, the
// secret is selected for Ctrl-C). ids: {code, copy}, the elements' ids.
export function secretBox(value, ids) {
    const code = h('code', { id: ids.code }, value);
    const copy = h('button', { type: 'button', class: 'secondary', id: ids.copy,
                               onclick: async () => {
                                   try {
                                       await navigator.clipboard.writeText(value);
                                       showStatus('Copied.');
                                   } catch (e) {
                                       getSelection().selectAllChildren(code);
                                       showStatus('Select and copy it by hand.');
                                   }
                               } }, 'Copy');
    return h('div', { class: 'secret' }, code, copy);
}
