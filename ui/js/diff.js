// Line diffs shown as text: the API's unified diffs (patches) and a diff
// between any two versions of a document, computed here. Each line is a
// text node in a <span> whose class says what it is (add, del, hunk).
import { h } from './dom.js';

// The longest common subsequence of the lines between the common head and
// tail (what an edit of a document usually leaves), as the operations
// ' ', '-', '+' with their lines. Beyond LIMIT lines in the middle the
// table would be too big for a page: the middle is then shown as removed
// and added whole.
const LIMIT = 2000;

export function lineDiff(a, b) {
    const x = String(a).split('\n'), y = String(b).split('\n');
    let head = 0;
    while (head < x.length && head < y.length && x[head] === y[head]) {
        head++;
    }
    let tail = 0;
    while (tail < x.length - head && tail < y.length - head
           && x[x.length - 1 - tail] === y[y.length - 1 - tail]) {
        tail++;
    }
    const xs = x.slice(head, x.length - tail), ys = y.slice(head, y.length - tail);
    const ops = x.slice(0, head).map((l) => [' ', l]);
    if (xs.length > LIMIT || ys.length > LIMIT) {
        ops.push(...xs.map((l) => ['-', l]), ...ys.map((l) => ['+', l]));
    } else {
        const n = xs.length, m = ys.length, w = m + 1;
        const len = new Uint32Array((n + 1) * w);
        for (let i = n - 1; i >= 0; i--) {
            for (let j = m - 1; j >= 0; j--) {
                len[i * w + j] = xs[i] === ys[j] ? len[(i + 1) * w + j + 1] + 1
                    : Math.max(len[(i + 1) * w + j], len[i * w + j + 1]);
            }
        }
        let i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && xs[i] === ys[j]) {
                ops.push([' ', xs[i++]]);
                j++;
            } else if (j < m && (i === n || len[i * w + j + 1] >= len[(i + 1) * w + j])) {
                ops.push(['+', ys[j++]]);
            } else {
                ops.push(['-', xs[i++]]);
            }
        }
    }
    ops.push(...x.slice(x.length - tail).map((l) => [' ', l]));
    return ops;
}

function line(cls, text) {
    return h('span', { class: cls }, text, '\n');
}

// The diff of two texts, as a <pre>.
export function diffView(a, b, attrs = {}) {
    const ops = lineDiff(a, b);
    const changed = ops.some(([op]) => op !== ' ');
    return h('pre', { class: 'diff', tabindex: 0, 'aria-label': 'Differences', ...attrs },
             changed ? ops.map(([op, l]) => line(op === '+' ? 'add' : op === '-' ? 'del' : 'same',
                                                 op + ' ' + l))
                     : line('same', '(no difference)'));
}

// A unified diff (as `diff -u` writes it), as a <pre>.
export function unifiedView(text, attrs = {}) {
    return h('pre', { class: 'diff', tabindex: 0, 'aria-label': 'Patch', ...attrs },
             String(text ?? '').split('\n').map((l) =>
        line(/^(\+\+\+|---)/.test(l) ? 'file' : l.startsWith('@@') ? 'hunk'
             : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : 'same', l)));
}
