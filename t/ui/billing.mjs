// t/ui/billing.mjs: the billing page's actions at the payment provider in a
// real headless Chromium, against the Apache::Test server and the fake
// provider (t/lib/FakeStripe.pm); t/ui/billing.t prepares the data, runs it
// and checks afterwards what it did:
//
//   SVC_UI_URL             the UI's server       SVC_UI_CHROMIUM  the chromium
//   SVC_UI_ORG             an org the signed-in user (fake sign-in) owns
//   SVC_UI_MEMBER_SESSION  a session cookie of a plain member of it
//   BILLING_API_URL        the fake provider (its control endpoints)
//   SVC_UI_RESULT          a file to write what billing.t checks afterwards
//
// The provider's checkout and portal pages are on its own origins
// (checkout.stripe.com, billing.stripe.com): the browser goes there, and
// this walk answers those addresses itself, as the provider's page would
// load, then does what the customer does there (pays) through the fake's
// control endpoint, which sends the signed webhook the provider sends.
import { BASE, result, check, newContext, watchedPage, axe, clean, text, signIn, run, ready,
         statusIs } from './lib.mjs';

const ORG = process.env.SVC_UI_ORG;
const STRIPE = process.env.BILLING_API_URL;
const BILLING = `${BASE}/orgs/${ORG}/billing`;

async function stripe(what, body) {
    const res = await fetch(`${STRIPE}/_control/${what}`, {
        method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
    if (!res.ok) {
        throw new Error(`fake provider ${what}: ${res.status} ${await res.text()}`);
    }
    return res.json();
}

// The provider's own pages, as far as this test goes: they load.
async function providerPages(ctx) {
    const page = (title) => (route) => route.fulfill({
        status: 200, contentType: 'text/html; charset=utf-8',
        body: `<!doctype html><html lang="en"><title>${title}</title><h1>${title}</h1></html>` });
    await ctx.route('https://checkout.stripe.com/**', page('Checkout'));
    await ctx.route('https://billing.stripe.com/**', page('Customer portal'));
}

async function narrow(browser, cookies, name, sel) {
    const small = await newContext(browser, { viewport: { width: 375, height: 740 }, isMobile: true,
                                              hasTouch: true, deviceScaleFactor: 2 });
    if (cookies) {
        await small.addCookies(cookies);
    }
    const p = await watchedPage(small);
    await p.goto(BILLING);
    await ready(p, sel);
    check(await p.evaluate(() => document.documentElement.scrollWidth) <= 375,
          `375 px wide: ${name} needs no sideways scrolling`);
    await axe(p, `${name} at 375 px`);
    await clean(p, p.seen, `${name} at 375 px`);
    await small.close();
}

await run(async (browser) => {
    // --- an admin (the owner) subscribes through the provider's checkout ---------------------
    const ctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    await providerPages(ctx);
    const page = await watchedPage(ctx);
    await signIn(page, `/orgs/${ORG}/billing`);
    await ready(page, '#checkout');
    check(await text(page, '#billing-plan') === 'No plan', 'billing: no plan yet');
    check(await page.locator('#portal').count() === 1 && await page.locator('#card-form').count() === 1,
          '... the portal and the card for the owner');
    check(await text(page, '#card') === 'No card on file.', '... and no card');
    await axe(page, 'the billing page (no plan)');
    await page.selectOption('#checkout select[name=plan]', 'team');
    await page.click('#checkout button[type=submit]');
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    const session = new URL(page.url()).pathname.split('/').pop();
    result.session = session;
    check(/^cs_test_\w+$/.test(session), 'Continue to payment: the browser is at the provider\'s '
          + 'checkout page of a new session', page.url());

    // The customer pays; the provider sends the browser back to the success URL ...
    const paid = await stripe('complete_checkout', { session });
    await page.goto(`${BILLING}?checkout=done`);
    await ready(page, '#billing-plan');
    await statusIs(page, /plan shows here once it confirms/);
    check(await text(page, '#billing-plan') === 'No plan',
          'back from checkout before the provider\'s webhook: still no plan, and the page says so');
    await page.evaluate(() => { window.__sameDocument = true; });
    // ... and its webhook (signed) reaches the service.
    const sent = await stripe('deliver', { url: `${BASE}/webhooks/billing`,
                                           ids: paid.events.map((e) => e.id) });
    check(sent.deliveries.every((d) => Number(d.status) === 200), 'the provider\'s webhook is accepted',
          sent.deliveries);
    await page.waitForFunction(() => document.getElementById('billing-plan')?.textContent === 'Team');
    check(await page.evaluate(() => window.__sameDocument === true),
          'the page shows the Team plan without a reload (the org\'s event stream)');
    await statusIs(page, /subscription changed: active/);
    check((await text(page, '#billing')).includes('active'), '... active');
    check(await page.locator('#checkout').count() === 0, '... and offers no second checkout');
    await axe(page, 'the billing page (subscribed)');

    // --- the customer portal -------------------------------------------------------------------
    await page.click('#portal');
    await page.waitForURL(/^https:\/\/billing\.stripe\.com\/p\/session\//);
    check(true, 'Open the customer portal: the browser is at the provider\'s portal');
    await page.goto(BILLING);
    await ready(page, '#card-form');

    // --- the payment method -------------------------------------------------------------------
    await page.fill('#card-form input[name=payment_method]', 'pm_card_chargeDeclined');
    await page.click('#card-form button[type=submit]');
    await page.locator('#problem:not([hidden])').waitFor();
    const problem = await text(page, '#problem');
    check(/declined/i.test(problem) && /payment_method/.test(problem) && /Request id: \S+/.test(problem),
          'a declined card: the provider\'s refusal, on payment_method, with the request id', problem);
    check(await text(page, '#card') === 'No card on file.', '... and still no card');
    await page.fill('#card-form input[name=payment_method]', 'pm_card_visa');
    await page.click('#card-form button[type=submit]');
    await statusIs(page, /default card is set/);
    check(/^visa ending in 4242, expires 12\/\d{4}$/.test(await text(page, '#card')),
          'a test card: set, shown as the provider describes it', await text(page, '#card'));
    await page.reload();
    await ready(page, '#card-form');
    check((await text(page, '#card')).startsWith('visa ending in 4242'), '... and read back');
    await clean(page, page.seen, 'the billing page (owner)');
    await narrow(browser, await ctx.cookies(), 'the owner\'s billing page', '#card-form');
    await ctx.close();

    // --- a plain member: read-only -------------------------------------------------------------
    const host = new URL(BASE).hostname;
    const cookies = [{ name: 'service_session', value: process.env.SVC_UI_MEMBER_SESSION,
                       domain: host, path: '/', httpOnly: true, sameSite: 'Lax' }];
    const mctx = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    await mctx.addCookies(cookies);
    const mp = await watchedPage(mctx);
    await mp.goto(BILLING);
    await ready(mp, '#billing-readonly');
    check(await text(mp, '#billing-plan') === 'Team', 'a member sees the plan');
    check(await mp.locator('#checkout, #portal, #card-form, #card, #budget').count() === 0,
          '... and no checkout, portal, card or budget');
    const refused = await mp.evaluate(async (org) => {
        const call = async (method, path, body) => {
            const r = await fetch(`/api/orgs/${org}/billing/${path}`, {
                method, credentials: 'same-origin',
                headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
                body: body && JSON.stringify(body) });
            return `${r.status} ${(await r.json()).code}`;
        };
        const back = `${location.origin}/orgs/${org}/billing`;
        return [await call('POST', 'checkout', { plan: 'business', success_url: back,
                                                  cancel_url: back }),
                await call('POST', 'portal', { return_url: back }),
                await call('GET', 'payment-method'),
                await call('PUT', 'payment-method', { payment_method: 'pm_card_mastercard' })];
    }, ORG);
    check(refused.every((r) => r === '403 forbidden'),
          '... and the API refuses them to a member (checkout, portal, card read and set)', refused);
    await axe(mp, 'the billing page (member)');
    await clean(mp, mp.seen, 'the billing page (member)');
    await narrow(browser, cookies, 'the member\'s billing page', '#billing-readonly');
    await mctx.close();
});
