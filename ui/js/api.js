// The public API, called with the session cookie (same origin): the only
// way the UI reads or changes anything. A refusal is thrown as a Problem
// carrying the RFC 9457 document's detail and request_id.

export class Problem extends Error {
    constructor(status, doc) {
        super((doc && doc.detail) || `HTTP ${status}`);
        this.status = status;
        this.code = (doc && doc.code) || null;
        this.detail = (doc && doc.detail) || null;
        this.requestId = (doc && doc.request_id) || null;
        this.errors = (doc && Array.isArray(doc.errors)) ? doc.errors : [];
    }
}

// api('POST', '/api/orgs', {slug, name}, {idempotencyKey}) -> the decoded
// JSON answer (null for 204; with {text: true}, the answer's text). No
// X-Requested-With: the browser's Origin header is what the server's CSRF
// check takes, as for any other client.
export async function api(method, path, body, opts = {}) {
    const headers = { Accept: 'application/json' };
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
    }
    if (opts.idempotencyKey) {
        headers['Idempotency-Key'] = opts.idempotencyKey;
    }
    let res;
    try {
        res = await fetch(path, init);
    } catch (e) {
        throw new Problem(0, { detail: 'The server could not be reached.' });
    }
    if (res.status === 204) {
        return null;
    }
    const type = res.headers.get('Content-Type') || '';
    if (res.ok && opts.text) {
        return res.text();      // a document's body: text/markdown
    }
    let doc = null;
    if (/json/.test(type)) {
        doc = await res.json().catch(() => null);
    }
    if (!res.ok) {
        throw new Problem(res.status, doc || {
            detail: `The server answered ${res.status} ${res.statusText}.`,
            request_id: res.headers.get('X-Request-Id'),
        });
    }
    return doc;
}

// Path segments are always escaped: a slug or an id never changes a URL's shape.
export function path(strings, ...values) {
    return strings.reduce((acc, s, i) =>
        acc + s + (i < values.length ? encodeURIComponent(String(values[i])) : ''), '');
}

// The org's event stream (docs/api/events.md), once open. It starts with
// the next event to commit, so a page opens it before its first reading
// and misses nothing committed in between. It closes when the page goes.
export async function orgEvents(org) {
    const es = new EventSource(path`/api/orgs/${org}/events`);
    window.addEventListener('pagehide', () => es.close());
    await new Promise((resolve) => {
        es.addEventListener('open', resolve, { once: true });
        es.addEventListener('error', resolve, { once: true });
    });
    return es;
}
