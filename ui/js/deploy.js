// Deploy targets and deployments (docs/api/deployments.md), and billing
// (docs/api/billing.md): what the org has, and the main action of each
// (a new target, whose enrollment key is shown once; its key rotated,
// shown once too; its removal; a new deployment; the actions of each
// deployment's status; the budget). A deployment's own page, with its
// telemetry: deployment.js.
import { api, path } from './api.js';
import { h, append, clear, when, badge } from './dom.js';
import { act, showStatus, secretBox } from './page.js';

// The actions a deployment's status allows: [label, action, class].
const DEPLOY_ACTIONS = {
    planned: [['Approve the plan', 'approve'], ['Replan', 'replan', 'secondary']],
    plan_failed: [['Replan', 'replan', 'secondary']],
    deploying: [['Stop', 'stop', 'secondary']],
    running: [['Stop', 'stop', 'secondary'], ['Replan', 'replan', 'secondary'],
              ['Separate', 'separate', 'danger']],
    failed: [['Start', 'start'], ['Stop', 'stop', 'secondary'], ['Replan', 'replan', 'secondary'],
             ['Separate', 'separate', 'danger']],
    stopped: [['Start', 'start']],
};
const TEARDOWN_NOT = new Set(['tearing_down', 'torn_down', 'separating', 'separated']);

// deploymentActions(org, d, admin, after): the buttons of the actions d's
// status allows (approving is for admins), each one API call; after(label)
// runs once it is done.
export function deploymentActions(org, d, admin, after) {
    const base = path`/api/orgs/${org}/deployments/${d.id}`;
    const acts = (DEPLOY_ACTIONS[d.status] || [])
        .filter(([, a]) => a !== 'approve' || admin)
        .concat(TEARDOWN_NOT.has(d.status) ? [] : [['Tear down', 'teardown', 'danger']]);
    if (!acts.length) {
        return null;
    }
    return h('div', { class: 'actions' }, acts.map(([label, a, cls]) =>
        h('button', { type: 'button', class: cls, 'data-action': a,
                      'aria-label': `${label} (${d.project}, ${d.id})`,
                      onclick: () => act(async () => {
                          await api('POST', `${base}/${a}`,
                                    a === 'approve' ? { plan_version: d.plan.version } : undefined);
                          showStatus(`${label}: done.`);
                          await after(label);
                      }) }, label)));
}

// A key shown once (a new target's, or a rotated one), with its Copy button.
function showKey(box, t, what) {
    clear(box).append(h('p', {}, `${what} of ${t.name}; give it to its agent now, it is not `
                                 + 'shown again:'),
                      secretBox(t.key, { code: 'target-key-value', copy: 'copy-target-key' }));
}

export async function deploymentsPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    const admin = o.role === 'owner' || o.role === 'admin';
    const writer = o.role !== 'viewer';
    document.title = `Deployments · ${o.name} · mod_svc`;
    const targets = h('ul', { class: 'list', id: 'targets' });
    const deps = h('ul', { class: 'list', id: 'deployments' });
    const key = h('div', { id: 'target-key' });
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Deployments'), h('h2', {}, 'Deploy targets'), targets, key);
    if (admin) {
        const name = h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off' });
        main.append(h('form', { class: 'inline', id: 'new-target', onsubmit: (ev) => {
            ev.preventDefault();
            act(async () => {
                const t = await api('POST', path`/api/orgs/${org}/deploy-targets`, { name: name.value });
                name.value = '';
                showKey(key, t, 'The enrollment key');
                await refresh();
            });
        } }, h('label', {}, 'New target', name), h('button', { type: 'submit' }, 'Add target')));
    }
    main.append(h('h2', {}, 'Deployments'), deps);
    const form = writer ? h('form', { class: 'stack', id: 'new-deployment' }) : null;
    const setTargets = form ? newDeployment(form, org) : null;
    if (form) {
        main.append(h('h2', {}, 'New deployment'), form);
    }

    async function refresh() {
        const [tl, dl] = await Promise.all([
            api('GET', path`/api/orgs/${org}/deploy-targets` + '?limit=200'),
            api('GET', path`/api/orgs/${org}/deployments` + '?limit=200'),
        ]);
        const names = new Map(tl.data.map((t) => [t.id, t.name]));
        clear(targets);
        if (!tl.data.length) {
            targets.append(h('li', { class: 'muted' }, 'No targets yet.'));
        }
        for (const t of tl.data) {
            const tbase = path`/api/orgs/${org}/deploy-targets/${t.id}`;
            targets.append(h('li', { 'data-target-id': t.id },
                h('strong', {}, t.name), ' ', badge(t.status), ' ',
                h('span', { class: 'muted' },
                  `${t.agent ? `${t.agent.hostname} · agent ${t.agent.version} · seen `
                    + when(t.agent.last_seen_at) : 'no agent yet'} · key ${t.key_hint}… · `
                  + `${t.deployments} deployment(s)`),
                admin ? h('div', { class: 'actions' },
                    h('button', { type: 'button', class: 'secondary', 'data-action': 'rotate-key',
                                  'aria-label': `Rotate key (${t.name})`,
                                  onclick: () => act(async () => {
                                      const x = await api('POST', tbase + '/rotate-key');
                                      showKey(key, x, 'The new key');
                                      await refresh();
                                  }) }, 'Rotate key'),
                    h('button', { type: 'button', class: 'danger', 'data-action': 'remove',
                                  'aria-label': `Remove (${t.name})`,
                                  onclick: () => act(async () => {
                                      await api('DELETE', tbase);
                                      showStatus(`${t.name}: removed.`);
                                      await refresh();
                                  }) }, 'Remove')) : null));
        }
        clear(deps);
        if (!dl.data.length) {
            deps.append(h('li', { class: 'muted' }, 'No deployments yet.'));
        }
        for (const d of dl.data) {
            deps.append(h('li', { 'data-deployment-id': d.id },
                h('a', { href: path`/orgs/${org}/deployments/${d.id}` }, h('strong', {}, d.project)),
                ' ', badge(d.status), ' ',
                h('span', { class: 'muted' }, `on ${names.get(d.target_id) || d.target_id} `
                  + `(${d.target_status}) · ${d.replicas} replica(s) · run ${d.run_id} · `
                  + when(d.updated_at)),
                d.plan ? h('p', {}, 'Plan ', h('code', {}, `v${d.plan.version}`), ': ',
                           h('code', {}, d.plan.command), ' ',
                           h('span', { class: 'muted' }, d.plan.notes || '')) : null,
                d.error ? h('p', {}, h('code', {}, d.error.code), ' ', d.error.message) : null,
                deploymentActions(org, d, admin, refresh)));
        }
        if (setTargets) {
            setTargets(tl.data);
        }
    }
    await refresh();
    // A deployment's status changes (the agent's work done, a plan
    // proposed) show as they happen: the org's stream from now on, one
    // re-read for a burst of events.
    const es = new EventSource(path`/api/orgs/${org}/events`);
    let soon = null;
    es.addEventListener('deployment.status', () => {
        soon = soon || setTimeout(() => {
            soon = null;
            act(refresh);
        }, 300);
    });
    addEventListener('pagehide', () => es.close());
}

// The form for a new deployment: a project, one of its succeeded runs (its
// artifact is what is deployed), a target. (Creating a deployment takes no
// Idempotency-Key: a repeated click would make a second deployment, which
// the button, disabled while the call is out, avoids.) → a function that
// sets the targets offered.
function newDeployment(form, org) {
    const project = h('select', { name: 'project', required: true });
    const run = h('select', { name: 'run_id', required: true });
    const target = h('select', { name: 'target_id', required: true });
    const submit = h('button', { type: 'submit' }, 'Create deployment');
    const runs = () => act(async () => {
        clear(run);
        if (!project.value) {
            return;
        }
        const l = await api('GET', path`/api/orgs/${org}/projects/${project.value}/runs`
                                   + '?status=succeeded&limit=50');
        append(run, l.data.length ? l.data.map((r) => h('option', { value: r.id },
                                                  `${r.id} · ${when(r.finished_at)}`))
                                  : [h('option', { value: '' }, 'No succeeded run')]);
    });
    project.addEventListener('change', runs);
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        submit.disabled = true;
        act(async () => {
            const d = await api('POST', path`/api/orgs/${org}/deployments`,
                                { project: project.value, target_id: target.value,
                                  run_id: run.value });
            location.assign(path`/orgs/${org}/deployments/${d.id}`);
        }).finally(() => { submit.disabled = false; });
    });
    form.append(h('label', {}, 'Project', project), h('label', {}, 'Run (succeeded)', run),
                h('label', {}, 'Target', target), h('div', {}, submit));
    act(async () => {
        const l = await api('GET', path`/api/orgs/${org}/projects` + '?archived=false&limit=200');
        append(project, l.data.map((p) => h('option', { value: p.slug }, p.name)));
        await runs();
    });
    return (targets) => {
        const chosen = target.value;    // a refresh keeps what was chosen
        append(clear(target), targets.map((t) => h('option', { value: t.id }, t.name)));
        if (targets.some((t) => t.id === chosen)) {
            target.value = chosen;
        }
    };
}

function allowance(name, u) {
    return [h('dt', {}, name),
            h('dd', {}, u ? `${u.used} of ${u.included === null ? 'unlimited' : u.included}` : '—')];
}

export async function billingPage(main, me, org) {
    const o = await api('GET', path`/api/orgs/${org}`);
    const admin = o.role === 'owner' || o.role === 'admin';
    const [b, plans, usage] = await Promise.all([
        api('GET', path`/api/orgs/${org}/billing`),
        api('GET', path`/api/orgs/${org}/billing/plans`),
        api('GET', path`/api/orgs/${org}/usage` + '?group_by=project'),
    ]);
    document.title = `Billing · ${o.name} · mod_svc`;
    const money = (cents, cur) => `${(cents / 100).toFixed(2)} ${String(cur).toUpperCase()}`;
    const u = b.usage || {};
    main.append(h('p', {}, h('a', { href: path`/orgs/${org}` }, '← Organization')),
                h('h1', {}, 'Billing'),
                h('dl', { class: 'facts', id: 'billing' },
                  h('dt', {}, 'Plan'), h('dd', { id: 'billing-plan' },
                                         b.plan ? b.plan.name || b.plan.id : 'No plan'),
                  h('dt', {}, 'Status'), h('dd', {}, badge(b.status)),
                  h('dt', {}, 'Period ends'), h('dd', {}, when(b.current_period_end) || '—'),
                  h('dt', {}, 'Next invoice'),
                  h('dd', { id: 'next-invoice' }, b.next_invoice
                      ? `${money(b.next_invoice.amount_due, b.next_invoice.currency)} on `
                        + when(b.next_invoice.date)
                      : b.next_invoice_error || '—'),
                  allowance('Run minutes', u.run_minutes),
                  allowance('Model tokens', u.model_tokens),
                  allowance('Deployment hours', u.deployment_hours),
                  h('dt', {}, 'Model spend'), h('dd', {}, `${u.model_cost_usd ?? 0} USD`)),
                h('h2', {}, 'Plans'),
                h('ul', { class: 'list', id: 'plans' }, plans.data.length
                    ? plans.data.map((p) => h('li', {}, h('strong', {}, p.name), ' ',
                        h('span', { class: 'muted' }, `${money(p.price.amount, p.price.currency)} a `
                          + `${p.price.interval}${p.hard_limits ? ' · hard limits' : ''}`)))
                    : h('li', { class: 'muted' }, 'No plans are offered.')),
                h('h2', {}, 'Usage this month, by project'),
                h('ul', { class: 'list', id: 'usage' }, usage.data.length
                    ? usage.data.map((r) => h('li', {},
                        h('strong', {}, r.project ? r.project.name || r.project.slug || '(deleted)'
                                                  : '(no project)'), ' ',
                        h('span', { class: 'muted' }, `${r.run_minutes} run minutes · `
                          + `${r.model_calls} model calls · ${r.model_cost_usd} USD · `
                          + `${r.deployment_hours} deployment hours`)))
                    : h('li', { class: 'muted' }, 'Nothing used yet.')));
    if (!admin) {
        return;
    }
    const budget = await api('GET', path`/api/orgs/${org}/billing/budget`);
    const monthly = h('input', { name: 'monthly_usd', type: 'number', min: 1, max: 100000000,
                                 inputmode: 'numeric', value: budget.monthly_usd ?? '' });
    const hard = h('input', { name: 'hard', type: 'checkbox', checked: !!budget.hard });
    const state = h('p', { id: 'budget-state' });
    const show = (x) => clear(state).append(x.monthly_usd === null
        ? 'No budget.' : `${x.spend_usd} of ${x.monthly_usd} USD spent in ${x.month} `
          + `(${x.percent} %)${x.hard ? ', hard' : ''}${x.exceeded ? ': exceeded' : ''}.`);
    show(budget);
    main.append(h('h2', {}, 'Monthly budget for model spend'), state,
                h('form', { class: 'inline', id: 'budget', onsubmit: (ev) => {
                    ev.preventDefault();
                    act(async () => {
                        const x = await api('PUT', path`/api/orgs/${org}/billing/budget`,
                                            { monthly_usd: monthly.value ? Number(monthly.value) : null,
                                              hard: hard.checked });
                        show(x);
                        showStatus('Budget saved.');
                    });
                } },
                  h('label', {}, 'US dollars a month (empty: none)', monthly),
                  h('label', { class: 'check' }, hard, 'Refuse new work when spent'),
                  h('button', { type: 'submit' }, 'Save budget')));
}
