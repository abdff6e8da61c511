// The web UI's entry point: who is signed in (GET /api/me), the header
// (organization switcher, tokens, sign out), then the page of the path.
// Every page is a client-side route of the one index.html that httpd
// serves for these paths (docs/ui.md); links are plain links.
import { api, Problem } from './api.js';
import { h, clear } from './dom.js';
import { act, showProblem } from './page.js';
import { homePage, orgPage, projectPage } from './orgs.js';
import { runPage } from './run.js';
import { tokensPage } from './tokens.js';
import { providersPage } from './providers.js';
import { productsPage, productPage, documentPage } from './documents.js';
import { sharePage } from './share.js';
import { requestsPage, requestPage } from './pipeline.js';
import { membersPage, teamPage } from './members.js';
import { vcsPage } from './vcs.js';
import { auditPage } from './audit.js';
import { deploymentsPage, billingPage } from './deploy.js';
import { deploymentPage } from './deployment.js';

const routes = [
    [/^\/$/, homePage],
    [/^\/tokens$/, tokensPage],
    [/^\/orgs\/([^/]+)$/, orgPage],
    [/^\/orgs\/([^/]+)\/projects\/([^/]+)$/, projectPage],
    [/^\/orgs\/([^/]+)\/projects\/([^/]+)\/runs\/([^/]+)$/, runPage],
    [/^\/orgs\/([^/]+)\/providers$/, providersPage],
    [/^\/orgs\/([^/]+)\/projects\/([^/]+)\/products$/, productsPage],
    [/^\/orgs\/([^/]+)\/products\/([^/]+)$/, productPage],
    [/^\/orgs\/([^/]+)\/documents\/([^/]+)$/, documentPage],
    [/^\/orgs\/([^/]+)\/requests$/, requestsPage],
    [/^\/orgs\/([^/]+)\/requests\/([^/]+)$/, requestPage],
    [/^\/orgs\/([^/]+)\/members$/, membersPage],
    [/^\/orgs\/([^/]+)\/projects\/([^/]+)\/team$/, teamPage],
    [/^\/orgs\/([^/]+)\/vcs$/, vcsPage],
    [/^\/orgs\/([^/]+)\/audit$/, auditPage],
    [/^\/orgs\/([^/]+)\/deployments$/, deploymentsPage],
    [/^\/orgs\/([^/]+)\/deployments\/([^/]+)$/, deploymentPage],
    [/^\/orgs\/([^/]+)\/billing$/, billingPage],
];

// Pages for people without an account: no sign-in, no header.
const publicRoutes = [
    [/^\/share\/([^/]+)$/, sharePage],
];

function nav(me, orgSlug) {
    const el = clear(document.getElementById('nav'));
    if (!me) {
        return;
    }
    if (me.orgs.length) {
        const sel = h('select', { id: 'org-switcher', onchange: (ev) => {
            if (ev.target.value) {
                location.assign('/orgs/' + encodeURIComponent(ev.target.value));
            }
        } },
            orgSlug ? null : h('option', { value: '' }, 'Choose…'),
            me.orgs.map((o) => h('option', { value: o.slug, selected: o.slug === orgSlug },
                                 o.name)));
        el.append(h('label', { class: 'switcher' }, 'Organization', sel));
    }
    el.append(h('a', { href: '/tokens' }, 'Access tokens'));
    el.append(h('span', { class: 'muted', id: 'whoami' }, me.name || me.email));
    el.append(h('button', { type: 'button', class: 'secondary', id: 'sign-out',
                            onclick: () => act(async () => {
                                await api('POST', '/auth/logout');
                                location.assign('/');
                            }) }, 'Sign out'));
}

function signInPage(main) {
    document.title = 'Sign in · mod_svc';
    const back = location.pathname + location.search;
    const href = '/auth/login' + (back !== '/' ? '?return_to=' + encodeURIComponent(back) : '');
    main.append(h('h1', {}, 'Sign in'),
                h('p', {}, 'Sign in with your code-hosting account to see your organizations.'),
                h('p', {}, h('a', { class: 'button', href, id: 'sign-in' }, 'Sign in')));
}

async function boot() {
    const main = clear(document.getElementById('main'));
    const pub = publicRoutes.map(([re, page]) => [location.pathname.match(re), page])
        .find(([m]) => m);
    if (pub) {
        try {
            await pub[1](main, ...pub[0].slice(1).map(decodeURIComponent));
        } catch (e) {
            showProblem(e);
        }
        return;
    }
    let me = null;
    try {
        me = await api('GET', '/api/me');
    } catch (e) {
        if (!(e instanceof Problem && e.status === 401)) {
            showProblem(e);
            return;
        }
    }
    const p = location.pathname;
    const route = routes.map(([re, page]) => [p.match(re), page]).find(([m]) => m);
    const args = route ? route[0].slice(1).map(decodeURIComponent) : [];
    const orgSlug = p.startsWith('/orgs/') ? args[0] : null;
    nav(me, orgSlug);
    if (!me) {
        signInPage(main);
        return;
    }
    if (!route) {
        document.title = 'Not found · mod_svc';
        main.append(h('h1', {}, 'Not found'),
                    h('p', {}, 'There is no page here. ', h('a', { href: '/' }, 'Home')));
        return;
    }
    try {
        await route[1](main, me, ...args);
    } catch (e) {
        showProblem(e);
    }
}

boot();
