// The Hitch console: agents, a streaming chat, approval cards, the inbox of
// paused tasks and a task's history, all from the HTTP API of docs/api.md.

import { API, APIError, enc, loadSettings, saveSettings } from './api.js';
import { validate } from './schema.js';
import { el } from './dom.js';
import { inputCard } from './inputs.js';

const $ = (id) => document.getElementById(id);

const S = {
  settings: loadSettings(),
  api: null,
  agents: [],
  agent: null, // the selected agent's name
  taskId: null,
  task: null, // the last GET task
  busy: false, // a stream is open
  cards: [], // the approval cards shown
  current: null, // the streaming request {agent, task_id, request_id}
};
S.api = new API(S.settings);

const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '');
const short = (id) => (id ? id.slice(-8) : '');
const json = (v) => JSON.stringify(v);

function setStatus(text, kind = '') {
  const s = $('status');
  s.textContent = text;
  s.className = kind;
}

function notice(text) {
  const n = $('notice');
  n.textContent = text;
  n.hidden = !text;
}

// ---- settings -----------------------------------------------------------

function showSettings() {
  const s = S.settings;
  $('base-url').value = s.base;
  $('user').value = s.user;
  $('token').value = s.token;
  const who = s.token ? 'bearer token' : s.user || 'dev';
  $('conn-summary').textContent = `${who} @ ${s.base || location.host}`;
}

$('settings-form').addEventListener('submit', (e) => {
  e.preventDefault();
  S.settings = { base: $('base-url').value.trim(), user: $('user').value.trim(), token: $('token').value.trim() };
  saveSettings(S.settings);
  S.api = new API(S.settings);
  showSettings();
  $('settings').open = false;
  S.agent = null;
  S.taskId = null;
  start();
});

// ---- agents, tasks, inbox ---------------------------------------------

function agentDef(name) {
  return S.agents.find((a) => a.name === name);
}

function toolSchema(agentName, tool) {
  const t = (agentDef(agentName)?.tools || []).find((t) => t.name === tool);
  return t ? t.input_schema : undefined;
}

async function loadAgents() {
  const list = $('agents');
  try {
    S.agents = (await S.api.json('GET', '/agents')).agents || [];
  } catch (e) {
    S.agents = [];
    list.replaceChildren(el('li', { class: 'hint' }, `Cannot list the agents: ${e.message}`));
    return;
  }
  renderAgents();
}

function renderAgents() {
  $('agents').replaceChildren(...S.agents.map((a) =>
    el('li', {}, el('a', { href: `#/agents/${enc(a.name)}`, 'aria-current': a.name === S.agent ? 'true' : null },
      a.name, el('small', {}, a.description || '')))));
}

async function loadTasks() {
  const list = $('tasks');
  if (!S.agent) {
    list.replaceChildren();
    return;
  }
  try {
    const r = await S.api.json('GET', `/agents/${enc(S.agent)}/tasks?limit=20`);
    list.replaceChildren(...r.tasks.map((t) => taskLink(t)));
    if (!r.tasks.length) list.append(el('li', { class: 'hint' }, 'No tasks yet.'));
  } catch (e) {
    list.replaceChildren(el('li', { class: 'hint' }, `Cannot list the tasks: ${e.message}`));
  }
}

function taskLink(t, withAgent = false) {
  const label = `${withAgent ? t.agent + ' · ' : ''}task …${short(t.task_id)}`;
  return el('li', {}, el('a', {
    href: `#/agents/${enc(t.agent)}/tasks/${enc(t.task_id)}`,
    'aria-current': t.task_id === S.taskId ? 'true' : null,
    'data-task': t.task_id,
  }, label, el('small', {}, `${t.status} · ${new Date(t.updated_at).toLocaleString()}`)));
}

// The inbox: the caller's paused tasks of every agent, newest first.
async function loadInbox() {
  const all = [];
  const failed = [];
  await Promise.all(S.agents.map(async (a) => {
    try {
      const r = await S.api.json('GET', `/agents/${enc(a.name)}/tasks?status=Paused&limit=100`);
      all.push(...r.tasks);
    } catch {
      failed.push(a.name);
    }
  }));
  all.sort((x, y) => y.updated_at.localeCompare(x.updated_at));
  const list = $('inbox');
  list.replaceChildren(...all.map((t) => taskLink(t, true)));
  if (!all.length) list.append(el('li', { class: 'hint' }, 'Nothing waits for you.'));
  if (failed.length) list.append(el('li', { class: 'hint' }, `Could not read: ${failed.join(', ')}`));
  $('inbox-count').textContent = all.length ? String(all.length) : '';
}

$('inbox-refresh').addEventListener('click', () => loadInbox());

// ---- routing --------------------------------------------------------------

async function route() {
  notice('');
  const m = /^#\/agents\/([^/]+)(?:\/tasks\/([^/]+))?$/.exec(location.hash);
  if (!m) {
    if (!S.agent && S.agents.length === 1) selectAgent(S.agents[0].name);
    return;
  }
  const agent = decodeURIComponent(m[1]);
  const task = m[2] ? decodeURIComponent(m[2]) : null;
  if (agent !== S.agent || !task) selectAgent(agent);
  if (task) await openTask(task);
}

window.addEventListener('hashchange', () => {
  if (!S.busy) route();
});

function selectAgent(name) {
  S.agent = name;
  S.taskId = null;
  S.task = null;
  const a = agentDef(name);
  $('chat-h').textContent = a ? `${a.name} ${a.version ? 'v' + a.version : ''}` : name;
  $('task-meta').textContent = a ? a.description : 'This agent is not deployed here.';
  $('transcript').replaceChildren();
  $('requests').replaceChildren();
  renderArtifacts({});
  clearApprovals();
  notice('');
  setStatus('');
  renderAgents();
  loadTasks();
  updateComposer();
}

$('new-task').addEventListener('click', () => {
  if (S.agent) {
    history.replaceState(null, '', `#/agents/${enc(S.agent)}`);
    selectAgent(S.agent);
    $('message').focus();
  }
});

function setTaskHash() {
  const h = `#/agents/${enc(S.agent)}/tasks/${enc(S.taskId)}`;
  if (location.hash !== h) history.replaceState(null, '', h);
}

// ---- a task's history ------------------------------------------------------

async function openTask(taskId) {
  S.taskId = taskId;
  try {
    S.task = await S.api.json('GET', `/agents/${enc(S.agent)}/tasks/${enc(taskId)}`);
  } catch (e) {
    S.task = null;
    $('transcript').replaceChildren();
    clearApprovals();
    notice(`Cannot read task ${taskId}: ${e.message}`);
    updateComposer();
    return null;
  }
  renderTask(S.task);
  for (const a of $('tasks').querySelectorAll('a')) a.setAttribute('aria-current', a.dataset.task === taskId ? 'true' : 'false');
  return S.task;
}

function textOf(blocks) {
  return (blocks || []).map((b) => (b.type === 'json' ? json(b.json) : b.text ?? '')).join(' ');
}

const entry = (kind, label, ...body) =>
  el('li', { class: `msg ${kind}` }, label ? el('span', { class: 'label' }, label) : null, ...body);

function decisionEntry(action, by, reason, input, at) {
  const what = { approve: 'Approved', reject: 'Rejected', edit: 'Edited and approved', answer: 'Answered' }[action] || action;
  const who = by === 'system:expiry' ? 'Expired: no decision came in time' : `${what} by ${by}`;
  return entry(`decision ${action}`, '', `${who}${at ? ' at ' + time(at) : ''}`,
    reason ? ` — “${reason}”` : '', input ? el('code', {}, ' ' + json(input)) : null);
}

function resultEntry(name, status, text) {
  return entry(`result ${status}`, `${name} ${status === 'success' ? '→' : '✗'}`, el('code', {}, text));
}

function renderTask(t) {
  const list = $('transcript');
  list.replaceChildren();
  const names = {};
  const decided = {};
  for (const r of t.requests || []) {
    for (const d of r.decisions || []) {
      for (const c of d.calls || []) decided[c.tool_call_id] = { d, c };
    }
  }
  for (const it of t.items || []) {
    for (const b of it.content || []) {
      if (it.role === 'user' && b.type === 'text') list.append(entry('user', '', b.text));
      else if (it.role === 'user' && b.type === 'image') list.append(entry('user', '', `[image ${b.media_type || ''}]`));
      else if (b.type === 'reasoning') list.append(entry('thinking', 'Thinking', b.text));
      else if (b.type === 'text') list.append(entry('answer', '', b.text));
      else if (b.type === 'tool_use') {
        names[b.id] = b.name;
        list.append(entry('tool', `Tool call ${b.name}`, el('code', {}, json(b.input))));
        const x = decided[b.id];
        if (x) list.append(decisionEntry(x.c.action, x.d.approver, x.c.reason || x.d.reason, x.c.input, x.d.decided_at));
      } else if (b.type === 'tool_result') {
        list.append(resultEntry(names[b.tool_use_id] || 'tool', b.status, textOf(b.content)));
      } else if (b.type === 'summary' || b.text) {
        list.append(entry('info', b.type, b.text || ''));
      }
    }
  }
  $('task-meta').textContent = `Task ${t.task_id} · ${t.status} · session …${short(t.session_id)}`;
  renderRequests(t);
  renderArtifacts(t);
  const paused = [...(t.requests || [])].reverse().find((r) => r.status === 'Paused');
  showPending(paused ? roundCalls(t, { agent: t.agent, task_id: t.task_id, request_id: paused.request_id }) : []);
  updateComposer();
}

// ---- artifacts ------------------------------------------------------------

// Images of these types are shown inline (as an <img> of a blob: URL, which
// runs nothing); every other artifact is only ever a download: an agent-made
// HTML or SVG must never run on the console's origin.
const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const mediaBase = (t) => (t || '').split(';')[0].trim().toLowerCase();

function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1 << 20)).toFixed(1)} MB`;
}

// artifactBlob reads an artifact's bytes: the route answers them (hitch
// serve), or, with redirect=false, a presigned URL to read them from (S3),
// which is fetched without the token.
async function artifactBlob(a) {
  const resp = await S.api.fetch('GET', a.url + '?redirect=false');
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
  if ((resp.headers.get('Content-Disposition') || '').startsWith('attachment')) return resp.blob();
  const { url } = await resp.json();
  const signed = await fetch(url, { cache: 'no-store' });
  if (!signed.ok) throw new Error(`${signed.status} ${signed.statusText}`);
  return signed.blob();
}

async function download(a) {
  try {
    // The blob is typed as a download, whatever the artifact says it is.
    const blob = new Blob([await artifactBlob(a)], { type: 'application/octet-stream' });
    const href = URL.createObjectURL(blob);
    const link = el('a', { href, download: a.name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(href), 60000);
  } catch (e) {
    notice(`Cannot download ${a.name}: ${e.message}`);
  }
}

function renderArtifacts(t) {
  const arts = t.artifacts || [];
  $('artifacts-box').hidden = arts.length === 0;
  $('artifacts').replaceChildren(...arts.map((a) => {
    const li = el('li', { class: 'artifact', 'data-artifact': a.artifact_id },
      el('span', { class: 'name' }, a.name), ` ${mediaBase(a.media_type)} · ${sizeText(a.size)} `,
      el('button', { type: 'button', class: 'small', onclick: () => download(a) }, 'Download'));
    if (INLINE.has(mediaBase(a.media_type))) {
      artifactBlob(a).then((b) => {
        const img = el('img', { alt: a.name, class: 'artifact-image' });
        img.src = URL.createObjectURL(new Blob([b], { type: mediaBase(a.media_type) }));
        li.append(img);
      }).catch((e) => notice(`Cannot show ${a.name}: ${e.message}`));
    }
    return li;
  }));
}

// usageText is a request's model tokens: the input billed at the full
// price, read from and written to the prompt cache, and the output.
function usageText(u) {
  const n = (v) => String(v || 0);
  return `tokens: ${n(u.input_tokens)} input, ${n(u.cache_read_input_tokens)} cache read, ` +
    `${n(u.cache_write_input_tokens)} cache write, ${n(u.output_tokens)} output`;
}

function renderRequests(t) {
  $('requests').replaceChildren(...(t.requests || []).map((r) => el('li', {},
    `${r.kind} …${short(r.request_id)}: ${r.status}`,
    r.error ? ` (${r.error.code}: ${r.error.message})` : '',
    r.canceled_by ? ` — canceled by ${r.canceled_by}` : '',
    r.usage ? el('div', { class: 'usage' }, usageText(r.usage)) : '',
    el('ul', {}, ...(r.decisions || []).map((d) => el('li', { class: 'decision-record' },
      `round ${d.round}: ${d.action} by ${d.approver} at ${time(d.decided_at)}`,
      d.reason ? ` — “${d.reason}”` : '',
      (d.calls || []).length > 1 || (d.calls || []).some((c) => c.action === 'edit')
        ? ` (${d.calls.map((c) => c.action + (c.input ? ' ' + json(c.input) : '')).join('; ')})` : ''))))));
}

// ---- approval and input cards ------------------------------------------

function clearApprovals() {
  S.cards = [];
  S.panel = '';
  $('approvals').replaceChildren();
  $('approvals').hidden = true;
}

// remoteLeaf tells a pending call of a remote A2A agent: its resume URL is
// on another system.
function remoteLeaf(url) {
  return /^https?:\/\//.test(url || '');
}

function pendingLive() {
  return S.cards.some((c) => !c.expired && !c.sent && !c.closed);
}

// roundCalls lists a paused request's pending calls, approvals and inputs,
// each with where it is decided. res holds pending_approvals,
// pending_inputs and round (GET task, or a Paused RequestResult); ids names
// the request ({agent, task_id, request_id}).
function roundCalls(res, ids) {
  const all = [...(res.pending_approvals || []), ...(res.pending_inputs || [])];
  // A remote agent's call is decided here, at this task (the decision goes
  // on to the other system), never with this token sent there; with one
  // among them, every call of the round is decided here, together.
  const atCaller = all.some((p) => remoteLeaf(p.resume_url));
  return all.map((p) => atCaller ? {
    ...p, resume_url: '', round: res.round, agent: ids.agent, task_id: ids.task_id, request_id: ids.request_id,
  } : {
    // A leaf's call is decided at the leaf, in the leaf's round.
    ...p,
    round: p.round || res.round,
    agent: p.agent || ids.agent,
    task_id: p.task_id || ids.task_id,
    request_id: p.request_id || ids.request_id,
  });
}

// showPending renders one card per pending call, grouped by round: a
// round's decisions and answers go out together in one resume. The same
// round shown again (the task re-read) keeps its cards and what was typed
// in them; a round the server refused for good stays to read until another
// round replaces it.
function showPending(calls) {
  const sig = calls.map((c) => [c.resume_url, c.agent, c.task_id, c.request_id, c.round, c.tool_call_id, !!c.expired].join('|')).join(',');
  if (calls.length && sig === S.panel && pendingLive()) return;
  if (!calls.length && S.cards.some((c) => c.closed)) return;
  clearApprovals();
  if (!calls.length) return;
  S.panel = sig;
  const groups = new Map();
  for (const c of calls) {
    const url = c.resume_url || `/agents/${enc(c.agent)}/tasks/${enc(c.task_id)}/requests/${enc(c.request_id)}/resume`;
    const key = url + '#' + c.round;
    if (!groups.has(key)) groups.set(key, { url, round: c.round, calls: [], cards: [], choices: new Map(), ids: c, inputs: false, bar: null });
    const g = groups.get(key);
    g.calls.push(c);
    if (c.kind) g.inputs = true;
  }
  const box = $('approvals');
  const anyInputs = calls.some((c) => c.kind);
  box.append(el('h3', {}, anyInputs ? 'Waiting for you' : 'Waiting for your decision'));
  for (const g of groups.values()) {
    for (const c of g.calls) {
      const card = c.kind ? makeInputCard(g, c) : makeCard(g, c);
      g.cards.push(card);
      S.cards.push(card);
      box.append(card.root);
    }
    if (g.inputs) box.append(roundBar(g));
    if (g.cards.some((c) => c.expired)) expireGroup(g);
  }
  box.hidden = false;
  tick();
  updateComposer();
}

function expiredText(call) {
  const what = call.kind ? 'answered' : 'approved';
  return `Expired at ${time(call.expires_at)}: it can no longer be ${what}. Send a new message to go on.`;
}

function makeInputCard(g, call) {
  const card = inputCard(call, { agent: S.agent });
  card.group = g;
  card.restore = () => card.disable(false);
  return card;
}

// roundBar is a round's Send button, for a round holding inputs: it goes
// out once every input is answered (or declined) and every call decided.
function roundBar(g) {
  const errors = el('ul', { class: 'errors', role: 'alert' });
  const status = el('p', { class: 'outcome', role: 'status' });
  const send = el('button', { type: 'button', class: 'send-round' }, g.calls.length > 1 ? 'Send answers and decisions' : 'Send answer');
  const actions = el('div', { class: 'actions' }, send);
  const root = el('div', { class: 'card round-bar', 'data-round': String(g.round), role: 'group', 'aria-label': `Round ${g.round}` },
    el('p', { class: 'hint' }, g.calls.length > 1
      ? 'The calls above are settled together: answer each input and decide each approval, then send them at once.'
      : 'Answer, then send.'),
    errors, actions, status);
  send.addEventListener('click', () => submitRound(g));
  g.bar = {
    root, status,
    show(list) {
      errors.replaceChildren(...list.map((m) => el('li', {}, m)));
    },
    disable(on) {
      send.disabled = on;
    },
    close() {
      actions.remove();
    },
  };
  return root;
}

function makeCard(g, call) {
  const id = call.tool_call_id;
  const card = { call, group: g, expired: false, sent: false, closed: false };
  const expiry = el('p', { class: 'expiry' });
  const outcome = el('p', { class: 'outcome', role: 'status' });
  const approve = el('button', { type: 'button', class: 'approve', onclick: () => decide(card, { action: 'approve' }) }, 'Approve');
  const rejectBtn = el('button', { type: 'button', class: 'secondary reject', 'aria-expanded': 'false' }, 'Reject…');
  const editBtn = el('button', { type: 'button', class: 'secondary edit', 'aria-expanded': 'false' }, 'Edit…');
  const changeBtn = el('button', { type: 'button', class: 'secondary change', hidden: true }, 'Change');
  const reason = el('input', { name: 'reason', id: `reason-${id}`, autocomplete: 'off' });
  const rejectForm = el('form', { class: 'reject-form', hidden: true },
    el('label', { for: `reason-${id}` }, 'Reason (the agent sees it)', reason),
    el('div', { class: 'row' }, el('button', { type: 'submit', class: 'danger' }, 'Reject'),
      el('button', { type: 'button', class: 'secondary', onclick: () => toggle(rejectForm, rejectBtn, false) }, 'Cancel')));
  const input = el('textarea', { name: 'input', id: `input-${id}`, rows: '5', spellcheck: 'false' });
  const errors = el('ul', { class: 'errors', role: 'alert' });
  const editForm = el('form', { class: 'edit-form', hidden: true },
    el('label', { for: `input-${id}` }, `Input of ${call.name} (JSON)`, input), errors,
    el('div', { class: 'row' }, el('button', { type: 'submit' }, 'Approve with this input'),
      el('button', { type: 'button', class: 'secondary', onclick: () => toggle(editForm, editBtn, false) }, 'Cancel')));
  const actions = el('div', { class: 'actions' }, approve, rejectBtn, editBtn);
  const root = el('article', { class: 'card', 'data-call': id, 'aria-label': `Approval of ${call.name}` },
    el('h3', {}, call.name, call.agent && call.agent !== S.agent ? el('small', {}, ` (agent ${call.agent})`) : null),
    el('pre', { class: 'input' }, JSON.stringify(call.input, null, 2)),
    expiry, actions, rejectForm, editForm, changeBtn, outcome);

  rejectBtn.addEventListener('click', () => {
    toggle(editForm, editBtn, false);
    toggle(rejectForm, rejectBtn, rejectForm.hidden);
    if (!rejectForm.hidden) reason.focus();
  });
  editBtn.addEventListener('click', () => {
    toggle(rejectForm, rejectBtn, false);
    toggle(editForm, editBtn, editForm.hidden);
    if (!editForm.hidden) {
      input.value = JSON.stringify(call.input, null, 2);
      errors.replaceChildren();
      input.focus();
    }
  });
  rejectForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const r = reason.value.trim();
    decide(card, r ? { action: 'reject', reason: r } : { action: 'reject' });
  });
  editForm.addEventListener('submit', (e) => {
    e.preventDefault();
    let value;
    try {
      value = JSON.parse(input.value);
    } catch (err) {
      card.showErrors([`Not JSON: ${err.message}`]);
      return;
    }
    const problems = validate(toolSchema(call.agent || S.agent, call.name), value);
    if (problems.length) {
      card.showErrors(problems);
      return;
    }
    errors.replaceChildren();
    decide(card, { action: 'edit', input: value });
  });
  changeBtn.addEventListener('click', () => {
    g.choices.delete(id);
    card.restore();
    outcome.textContent = '';
    approve.focus();
  });

  Object.assign(card, {
    root, expiry, outcome,
    showErrors(list) {
      errors.replaceChildren(...list.map((m) => el('li', {}, m)));
      if (editForm.hidden) toggle(editForm, editBtn, true);
      input.focus();
    },
    disable(on) {
      for (const b of root.querySelectorAll('button, input, textarea')) b.disabled = on;
    },
    // restore enables what the card's state allows: a decided call offers
    // only Change (in a round that goes out with its Send button, or
    // waits for other calls).
    restore() {
      const chosen = g.choices.has(id);
      card.disable(chosen);
      changeBtn.hidden = !chosen;
      changeBtn.disabled = false;
      if (chosen) {
        toggle(rejectForm, rejectBtn, false);
        toggle(editForm, editBtn, false);
      }
    },
    // collect answers the call's decision for its round's Send button.
    collect() {
      const d = g.choices.get(id);
      if (d) return { decision: d };
      outcome.textContent = 'Decide this call: approve, reject or edit it.';
      return { errors: [outcome.textContent] };
    },
    focus() {
      (approve.disabled ? changeBtn : approve).focus();
    },
    close() {
      card.closed = true;
      if (!card.expired) expiry.textContent = '';
      card.disable(true);
      actions.remove();
      changeBtn.remove();
      rejectForm.remove();
      editForm.remove();
    },
    setExpired() {
      card.expired = true;
      root.classList.add('expired');
      expiry.textContent = expiredText(call);
      card.close();
    },
  });
  if (call.expired) card.expired = true;
  return card;
}

function toggle(form, btn, show) {
  form.hidden = !show;
  btn.setAttribute('aria-expanded', String(show));
}

function left(ms) {
  const s = Math.ceil(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

// expireGroup closes a round whose time is up: it expires at the earliest
// expires_at of its calls, all of them at once.
function expireGroup(g) {
  for (const c of g.cards) {
    if (c.root.classList.contains('expired')) continue;
    if (c.kind === 'input') c.setExpired(expiredText(c.call));
    else c.setExpired();
  }
  g.bar?.close();
}

// tick counts down each card's time left; a round whose time is up offers
// no decision any more.
function tick() {
  const now = Date.now();
  let changed = false;
  for (const c of S.cards) {
    if (c.expired || c.sent || c.closed || !c.call.expires_at) continue;
    const ms = Date.parse(c.call.expires_at) - now;
    if (ms <= 0) {
      expireGroup(c.group);
      changed = true;
    } else {
      c.expiry.textContent = `Expires in ${left(ms)} (at ${time(c.call.expires_at)})`;
    }
  }
  if (changed) {
    if (!pendingLive()) setStatus(S.cards.some((c) => c.kind === 'input') ? 'The round expired: nothing was run.' : 'The approval expired: nothing was run.');
    updateComposer();
  }
}
setInterval(tick, 1000);

// decide notes an approval card's decision. A round of approvals alone goes
// out once each of its calls is decided; a round holding inputs waits for
// its Send button.
async function decide(card, decision) {
  const g = card.group;
  if (card.expired || card.closed) return;
  g.choices.set(card.call.tool_call_id, decision);
  if (g.inputs || g.choices.size < g.calls.length) {
    card.outcome.textContent = g.inputs
      ? `Your choice: ${decision.action}. It goes out with the round's answers when you send them.`
      : `Your choice: ${decision.action}. Decide the other calls of this round to send it.`;
    card.restore();
    return;
  }
  const decisions = g.calls.map((c) => ({ tool_call_id: c.tool_call_id, ...g.choices.get(c.tool_call_id) }));
  await sendRound(g, decisions, card);
}

// submitRound sends a round holding inputs: every card must give its
// answer or decision; else each card says what it lacks and nothing is
// sent.
async function submitRound(g) {
  if (g.cards.some((c) => c.expired || c.closed || c.sent)) return;
  const decisions = [];
  const lacking = [];
  for (const c of g.cards) {
    const r = c.collect();
    if (r.errors) lacking.push(c);
    else decisions.push({ tool_call_id: c.call.tool_call_id, ...r.decision });
  }
  if (lacking.length) {
    g.bar.show([`${lacking.length} of the ${g.cards.length} calls of this round still need you: see ${lacking.length > 1 ? 'their cards' : 'its card'} above. Nothing was sent.`]);
    lacking[0].focus();
    return;
  }
  g.bar.show([]);
  await sendRound(g, decisions, null);
}

async function sendRound(g, decisions, card) {
  for (const c of g.cards) {
    c.disable(true);
    c.sent = true;
    if (!g.inputs) c.outcome.textContent = 'Sending…';
  }
  if (g.bar) {
    g.bar.disable(true);
    g.bar.status.textContent = 'Sending…';
  }
  notice('');
  try {
    // The round always goes with the decisions: a call that asks again in a
    // later round keeps its id, and a stale answer must not answer it.
    await runStream(g.url, { decisions, round: g.round }, { agent: g.ids.agent, task_id: g.ids.task_id, request_id: g.ids.request_id });
  } catch (e) {
    for (const c of g.cards) c.sent = false;
    setStatus('');
    if (g.inputs) {
      await answersRefused(e, g);
    } else {
      g.choices.clear();
      await decisionRefused(e, g, card, g.cards);
    }
    updateComposer();
  }
}

// conflictText re-reads the task after a 409 or 410 and says what the
// round became.
async function conflictText(e, g) {
  const t = S.agent && S.taskId ? await openTask(S.taskId) : null;
  const req = t?.requests?.find((r) => r.request_id === g.ids.request_id);
  const d = req?.decisions?.find((x) => x.round === g.round);
  loadInbox();
  loadTasks();
  const code = e instanceof APIError ? e.code : '';
  if (code === 'approval_expired' || code === 'input_expired' || d?.approver === 'system:expiry') {
    return `This round expired at ${time(g.calls[0].expires_at)}; nothing was run.`;
  }
  if (d) {
    return `Another decision was recorded first: ${d.action} by ${d.approver} at ${time(d.decided_at)}${d.reason ? ` (“${d.reason}”)` : ''}. Yours was not applied.`;
  }
  return `This round was already decided elsewhere (${e.message}). Yours was not applied.`;
}

const FINAL = new Set(['decision_conflict', 'not_paused', 'approval_expired', 'input_expired']);

async function decisionRefused(e, g, card, cards) {
  const code = e instanceof APIError ? e.code : '';
  if (code === 'invalid_input' || code === 'invalid_decisions') {
    for (const c of cards) {
      c.restore();
      c.outcome.textContent = '';
    }
    card.showErrors([`The server refused the input: ${e.message}`]);
    return;
  }
  if (FINAL.has(code)) {
    // Another tab or person decided first, or the round expired: show what
    // the task recorded.
    notice(await conflictText(e, g));
    return;
  }
  for (const c of cards) {
    c.restore();
    c.outcome.textContent = '';
  }
  notice(`The decision was not sent: ${e.message}`);
}

// answersRefused shows why the server refused a round holding inputs, in
// the round's cards, with everything typed left in place: a 400 names the
// call (its message holds the tool_call_id) and leaves the round open to
// correct; a 409 or 410 closes it.
async function answersRefused(e, g) {
  const code = e instanceof APIError ? e.code : '';
  g.bar.status.textContent = '';
  if (FINAL.has(code)) {
    for (const c of g.cards) c.close();
    g.bar.close();
    const h = $('approvals').querySelector('h3');
    if (h) h.textContent = 'Not sent';
    const what = await conflictText(e, g);
    g.bar.show([`The server refused the answers: ${e.message}`, what]);
    if (!g.bar.root.isConnected) notice(what); // another round took its place
    updateComposer();
    return;
  }
  for (const c of g.cards) c.restore();
  g.bar.disable(false);
  const named = g.cards.find((c) => e.message.includes(c.call.tool_call_id));
  const text = code === 'invalid_input' || code === 'invalid_decisions'
    ? `The server refused the answers: ${e.message}` : `The answers were not sent: ${e.message}`;
  g.bar.show([text]);
  if (named?.kind === 'input') named.showErrors([text]);
  (named || g.cards[0]).focus(e.message);
}

// ---- streaming -------------------------------------------------------------

// Live renders a request's events as they arrive.
class Live {
  constructor(list) {
    this.list = list;
    this.text = null; // the element receiving deltas
    this.kind = '';
    this.names = {};
  }

  add(e) {
    this.list.append(e);
    this.text = null;
    this.kind = '';
    e.scrollIntoView({ block: 'nearest' });
    return e;
  }

  delta(kind, label, s) {
    if (this.kind !== kind || !this.text) {
      const body = el('span', { class: 'text' });
      this.add(entry(`${kind} live`, label, body));
      this.text = body;
      this.kind = kind;
    }
    this.text.append(s);
  }

  on(name, d) {
    switch (name) {
      case 'thinking': this.delta('thinking', 'Thinking', d.delta); break;
      case 'answer': this.delta('answer', '', d.delta); break;
      case 'tool_call':
        this.names[d.id] = d.name;
        this.add(entry('tool', `Tool call ${d.name}`, el('code', {}, json(d.input))));
        break;
      case 'approval_required':
        setStatus('Paused: waiting for a decision.');
        break;
      case 'input_required':
        setStatus('Paused: waiting for your answers.');
        break;
      case 'request_complete':
        // The pause's cards, from the outcome (approval_required and
        // input_required each tell only part of the round).
        if (d.status === 'Paused') {
          showPending(roundCalls(d, { agent: S.agent, task_id: d.task_id || S.current.task_id, request_id: d.request_id }));
        }
        break;
      case 'approved':
      case 'rejected':
      case 'answered':
        clearApprovals();
        this.add(decisionEntry(d.input ? 'edit' : name === 'answered' ? 'answer' : name === 'approved' ? 'approve' : 'reject', d.by, d.reason, d.input));
        break;
      case 'tool_result': {
        const out = typeof d.output === 'string' ? d.output : json(d.output);
        this.add(resultEntry(d.name || this.names[d.id] || 'tool', d.status, out));
        break;
      }
      case 'cancelled': this.add(entry('info', 'Canceled', `by ${d.by}${d.reason ? ': ' + d.reason : ''}`)); break;
      case 'child': this.add(entry('info', `${d.agent} ›`, `${d.event}`)); break;
      case 'error': this.add(entry('error', 'Error', `${d.code}: ${d.message}`)); break;
      default: break;
    }
  }
}

// runStream POSTs with SSE and renders the request live; when it ends it
// re-reads the task, so the page shows what the server recorded.
async function runStream(path, body, ids) {
  S.busy = true;
  S.current = { ...ids };
  updateComposer();
  setStatus('Working…');
  const live = new Live($('transcript'));
  let end = null;
  try {
    end = await S.api.stream(path, body, ids, (name, d) => {
      if (name === 'request_started') {
        S.current.task_id = d.task_id;
        S.current.request_id = d.request_id;
        if (!S.taskId) {
          S.taskId = d.task_id;
          setTaskHash();
          $('task-meta').textContent = `Task ${d.task_id} · Running`;
        }
        $('stop').hidden = false;
      }
      live.on(name, d);
    }, (state, attempt) => {
      if (state === 'reconnecting') setStatus(`Connection lost; reconnecting (attempt ${attempt})…`, 'warn');
      else setStatus('Reconnected; following the request.', 'warn');
    });
  } finally {
    S.busy = false;
    $('stop').hidden = true;
    updateComposer();
  }
  if (S.taskId) {
    setTaskHash();
    await openTask(S.taskId);
  }
  const status = end.status || (end.code ? `Failed: ${end.code}` : '');
  const waits = S.cards.some((c) => c.kind === 'input') ? 'Paused: waiting for your answers.' : 'Paused: waiting for a decision.';
  setStatus(status === 'Paused' ? waits : status ? `Request ${status}.` : 'Done.');
  // A counter of finished requests, for whoever watches the page (tests).
  document.body.dataset.done = String(Number(document.body.dataset.done || 0) + 1);
  await Promise.all([loadInbox(), loadTasks()]);
  return end;
}

function updateComposer() {
  const can = !!S.agent && !S.busy && !pendingLive();
  $('message').disabled = !can;
  $('send').disabled = !can;
  $('new-task').disabled = !S.agent || S.busy;
  $('message').placeholder = pendingLive()
    ? (S.cards.some((c) => c.kind === 'input') ? 'This task waits for your answers above.' : 'This task waits for a decision on the calls above.')
    : 'Ask the agent… (Ctrl+Enter sends)';
}

$('composer').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = $('message').value;
  if (!text.trim() || !S.agent) return;
  const body = { items: [{ content_type: 'text', content: text }] };
  if (S.taskId) body.task_id = S.taskId;
  notice('');
  $('transcript').append(entry('user', '', text));
  $('message').value = '';
  try {
    await runStream(`/agents/${enc(S.agent)}/invoke`, body, { agent: S.agent });
  } catch (err) {
    notice(`Not sent: ${err.message}`);
    setStatus('');
    if (S.taskId) await openTask(S.taskId);
  }
  $('message').focus();
});

$('message').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    $('composer').requestSubmit();
  }
});

$('stop').addEventListener('click', async () => {
  const c = S.current;
  if (!c?.task_id) return;
  try {
    await S.api.json('POST', `/agents/${enc(c.agent)}/tasks/${enc(c.task_id)}/cancel`, { reason: 'stopped in the console' });
  } catch (e) {
    notice(`Cannot stop: ${e.message}`);
  }
});

// ---- start -------------------------------------------------------------------

async function start() {
  document.body.dataset.ready = 'false';
  showSettings();
  await loadAgents();
  await route();
  await loadInbox();
  document.body.dataset.ready = 'true';
}

setInterval(() => {
  if (document.visibilityState === 'visible' && !S.busy) loadInbox();
}, 30000);

start();
