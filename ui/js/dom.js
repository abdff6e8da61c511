// Building the page. User content (names, instructions, log lines) only
// ever becomes text nodes: nothing here parses a string as HTML,
// so a name like <img src=x onerror=...> shows as those characters.

export function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === undefined || v === null || v === false) {
            continue;
        }
        if (k.startsWith('on') && typeof v === 'function') {
            el.addEventListener(k.slice(2), v);
        } else if (k === 'class') {
            el.className = v;
        } else {
            el.setAttribute(k, v === true ? '' : String(v));
        }
    }
    append(el, children);
    return el;
}

export function append(el, children) {
    for (const c of children.flat(Infinity)) {
        if (c === undefined || c === null || c === false) {
            continue;
        }
        el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
}

export function clear(el) {
    while (el.firstChild) {
        el.firstChild.remove();
    }
    return el;
}

export function when(iso) {
    if (!iso) {
        return '';
    }
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toLocaleString();
}

export function badge(status) {
    return h('span', { class: `badge ${status}` }, status);
}

// The first line of a text, cut to n characters.
export function firstLine(s, n = 80) {
    const line = String(s || '').split('\n')[0];
    return line.length > n ? line.slice(0, n - 1) + '…' : line;
}
