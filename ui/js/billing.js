// Billing (docs/api/billing.md): the overview (deploy.js) and, for the
// org's owner and admins, what is done at the payment provider: a
// subscription started through its checkout, the subscription managed in
// its customer portal (plans, cancelling, cards, invoices), the default
// card. Checkout and portal are the provider's own pages: the page sends the
// browser to the URL the API answers, and the provider sends it back here.
// The subscription changes when the provider's webhook says so, so the page
// follows the org's event stream and shows each `billing.updated` as it
// comes (a browser back from checkout usually arrives before the webhook).
import { api, path, orgEvents } from './api.js';
import { h, clear } from './dom.js';
import { act, showStatus } from './page.js';
import { billingPage as overview } from './deploy.js';

// The provider's pages send the browser back to this page, on this origin
// (the API accepts only its own origins: no open redirect).
function here(org, outcome) {
    return location.origin + path`/orgs/${org}/billing` + (outcome ? `?checkout=${outcome}` : '');
}

function cardText(c) {
    return c ? `${c.brand} ending in ${c.last4}, expires ${c.exp_month}/${c.exp_year}`
             : 'No card on file.';
}

function subscription(org, b, plans) {
    const section = [h('h2', {}, 'Subscription')];
    if (b.status === 'none' || b.status === 'canceled') {
        const plan = h('select', { name: 'plan', required: true },
                       plans.data.map((p) => h('option', { value: p.id }, p.name)));
        const go = h('button', { type: 'submit' }, 'Continue to payment');
        section.push(h('form', { class: 'inline', id: 'checkout', onsubmit: (ev) => {
            ev.preventDefault();
            go.disabled = true;
            act(async () => {
                const s = await api('POST', path`/api/orgs/${org}/billing/checkout`,
                                    { plan: plan.value, success_url: here(org, 'done'),
                                      cancel_url: here(org, 'cancelled') },
                                    { idempotencyKey: crypto.randomUUID() });
                showStatus('Opening the payment provider’s checkout…');
                location.assign(s.url);
            }).finally(() => { go.disabled = false; });
        } }, h('label', {}, 'Plan', plan), go));
    }
    const portal = h('button', { type: 'button', id: 'portal', class: 'secondary',
                                 onclick: () => {
        portal.disabled = true;
        act(async () => {
            const s = await api('POST', path`/api/orgs/${org}/billing/portal`,
                                { return_url: here(org) });
            location.assign(s.url);
        }).finally(() => { portal.disabled = false; });
    } }, 'Open the customer portal');
    section.push(h('p', {}, 'Change the plan, cancel, update cards and download invoices at the ',
                   'payment provider: ', portal));
    return section;
}

async function paymentMethod(org) {
    const card = await api('GET', path`/api/orgs/${org}/billing/payment-method`);
    const shown = h('p', { id: 'card' }, cardText(card));
    const pm = h('input', { name: 'payment_method', required: true, pattern: 'pm_[A-Za-z0-9_]+',
                            maxlength: 255, autocomplete: 'off', spellcheck: 'false' });
    return [h('h2', {}, 'Payment method'), shown,
            h('form', { class: 'inline', id: 'card-form', onsubmit: (ev) => {
                ev.preventDefault();
                act(async () => {
                    const c = await api('PUT', path`/api/orgs/${org}/billing/payment-method`,
                                        { payment_method: pm.value });
                    clear(shown).append(cardText(c));
                    pm.value = '';
                    showStatus('The default card is set.');
                });
            } },
              h('label', {}, 'Payment method id (pm_…, made by the provider’s card form)', pm),
              h('button', { type: 'submit' }, 'Set as default card'))];
}

export async function billingPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    const admin = o.role === 'owner' || o.role === 'admin';
    const outcome = new URLSearchParams(location.search).get('checkout');
    // Each rendering is built aside and then replaces the page at once, one
    // after the other: events come in bursts (a checkout brings three).
    const build = async () => {
        const page = h('div');
        await fill(page);
        main.replaceChildren(...page.childNodes);
    };
    let queue = Promise.resolve();
    const render = () => (queue = queue.then(build, build));
    const fill = async (el) => {
        await overview(el, me, org);
        const [b, plans] = await Promise.all([api('GET', path`/api/orgs/${org}/billing`),
                                              api('GET', path`/api/orgs/${org}/billing/plans`)]);
        if (outcome === 'done' && b.status === 'none') {
            showStatus('Payment received by the provider: the plan shows here once it confirms.');
        } else if (outcome === 'cancelled') {
            showStatus('Checkout was cancelled; nothing changed.');
        }
        if (!admin) {
            el.append(h('p', { class: 'muted', id: 'billing-readonly' },
                          'Only the organization’s owner and admins change the plan and the card.'));
            return;
        }
        el.append(...subscription(org, b, plans), ...await paymentMethod(org));
    };
    // The stream first, then the page: a change committed in between is not missed.
    const es = await orgEvents(org);
    es.addEventListener('billing.updated', (ev) => act(async () => {
        const d = JSON.parse(ev.data);
        await render();
        showStatus(`The subscription changed: ${d.status}` + (d.plan ? ` (${d.plan})` : '') + '.');
    }));
    await render();
}
