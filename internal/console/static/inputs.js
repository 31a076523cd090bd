// Cards for a paused request's pending inputs (docs/api.md, "Pauses for
// input"): a question (ask_user), a client tool's result, an MCP server's
// elicitation. A card only builds its answer from what the person filled
// in; app.js gathers the answers and approvals of a round and sends them in
// one resume.
//
// A JSON Schema becomes a form when it is one field — a string, a number or
// integer, a boolean, an enum (a select), an array of enum values
// (checkboxes) — or a flat object of such fields; any other schema is
// answered as JSON in a text area.

import { el } from './dom.js';
import { validate } from './schema.js';

let serial = 0; // makes the ids of each card's fields unique on the page

const plain = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

// enumOptions lists the values of an enum schema as [{value, label}]: its
// enum (labelled by enumNames when given) or a oneOf/anyOf of consts
// (labelled by their titles); null when the schema is no enum.
export function enumOptions(s) {
  if (!s || typeof s !== 'object') return null;
  if (Array.isArray(s.enum) && s.enum.length) {
    const names = Array.isArray(s.enumNames) ? s.enumNames : [];
    return s.enum.map((v, i) => ({ value: v, label: typeof names[i] === 'string' ? names[i] : plain(v) }));
  }
  const alts = s.oneOf || s.anyOf;
  if (Array.isArray(alts) && alts.length && alts.every((a) => a && typeof a === 'object' && 'const' in a)) {
    return alts.map((a) => ({ value: a.const, label: typeof a.title === 'string' ? a.title : plain(a.const) }));
  }
  return null;
}

// fieldKind says how a schema is filled in as one field: 'string',
// 'number', 'integer', 'boolean', 'enum', 'multi' (an array of enum
// values), or null when no single field can.
export function fieldKind(s) {
  if (!s || typeof s !== 'object' || Array.isArray(s) || Array.isArray(s.type)) return null;
  const t = s.type;
  if (t === 'array') return enumOptions(s.items) ? 'multi' : null;
  if (t !== 'object' && t !== 'boolean' && enumOptions(s)) return 'enum';
  return ['string', 'number', 'integer', 'boolean'].includes(t) ? t : null;
}

// flatObject tells whether a schema is an object of fields that each fit
// one field, every required one among them.
function flatObject(s) {
  if (!s || typeof s !== 'object' || (s.type !== 'object' && s.type !== undefined)) return false;
  const props = s.properties;
  if (!props || typeof props !== 'object' || !Object.keys(props).length) return false;
  if (!Object.values(props).every((p) => fieldKind(p))) return false;
  return (s.required || []).every((r) => r in props);
}

// formable tells whether schemaForm renders a schema (else: JSON).
export function formable(s) {
  return !!fieldKind(s) || flatObject(s);
}

const INPUT_TYPES = { email: 'email', uri: 'url', date: 'date' };

// field renders one field of kind fieldKind(s). read() answers {value},
// {skip: true} (empty and optional: left out) or {error}.
function field(name, s, label, required, base) {
  const kind = fieldKind(s);
  const id = `${base}-${name || 'value'}`;
  const help = s.description ? el('small', { class: 'help', id: `${id}-help` }, s.description) : null;
  const described = help ? `${id}-help` : null;
  const mark = required ? el('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null;
  const title = el('span', { class: 'name' }, label, mark);
  const req = required ? 'true' : null;
  const wrap = (control) => el('div', { class: `field field-${kind}`, 'data-field': name }, control, help);
  const empty = () => (required ? { error: `${label}: is required` } : { skip: true });

  if (kind === 'boolean') {
    const box = el('input', { type: 'checkbox', id, name: name || 'value', 'aria-describedby': described });
    box.checked = s.default === true;
    return {
      root: wrap(el('label', { class: 'check', for: id }, box, title)),
      controls: [box],
      read: () => ({ value: box.checked }),
    };
  }
  if (kind === 'enum') {
    const opts = enumOptions(s);
    const sel = el('select', { id, name: name || 'value', 'aria-required': req, 'aria-describedby': described },
      el('option', { value: '' }, required ? 'Choose…' : '—'),
      ...opts.map((o, i) => el('option', { value: String(i) }, o.label)));
    const d = opts.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(s.default));
    if (d >= 0) sel.value = String(d);
    return {
      root: wrap(el('label', { for: id }, title, sel)),
      controls: [sel],
      read: () => (sel.value === '' ? empty() : { value: opts[Number(sel.value)].value }),
    };
  }
  if (kind === 'multi') {
    const opts = enumOptions(s.items);
    const def = Array.isArray(s.default) ? s.default.map((v) => JSON.stringify(v)) : [];
    const boxes = opts.map((o, i) => {
      const box = el('input', { type: 'checkbox', id: `${id}-${i}`, name: name || 'value', value: String(i) });
      box.checked = def.includes(JSON.stringify(o.value));
      return box;
    });
    const set = el('fieldset', { class: 'choices-multi', 'aria-describedby': described, 'aria-required': req },
      el('legend', {}, title),
      ...boxes.map((b, i) => el('label', { class: 'check', for: b.id }, b, opts[i].label)));
    return {
      root: wrap(set),
      controls: boxes,
      read: () => {
        const v = opts.filter((_, i) => boxes[i].checked).map((o) => o.value);
        return v.length || required ? { value: v } : { skip: true };
      },
    };
  }
  // string, number, integer
  const numeric = kind === 'number' || kind === 'integer';
  const type = numeric ? 'number' : INPUT_TYPES[s.format] || 'text';
  const input = el('input', {
    id, name: name || 'value', type, autocomplete: 'off', 'aria-required': req, 'aria-describedby': described,
    step: numeric ? (kind === 'integer' ? '1' : 'any') : null,
    min: numeric ? s.minimum : null, max: numeric ? s.maximum : null,
  });
  if (s.default !== undefined) input.value = plain(s.default);
  return {
    root: wrap(el('label', { for: id }, title, input)),
    controls: [input],
    read: () => {
      const raw = input.value;
      if (!numeric) return raw === '' ? empty() : { value: raw };
      if (raw.trim() === '') return input.validity?.badInput ? { error: `${label}: must be a number` } : empty();
      const n = Number(raw);
      return Number.isFinite(n) ? { value: n } : { error: `${label}: must be a number` };
    },
  };
}

// schemaForm renders schema as a form: {root, read(), controls}, where
// read() answers {value} or {errors}; null when the schema is not formable.
// label names a schema of one field.
export function schemaForm(schema, label = 'Answer') {
  const base = `in${++serial}`;
  if (fieldKind(schema)) {
    const f = field('', schema, schema.title || label, true, base);
    return {
      root: el('div', { class: 'schema-form' }, f.root),
      controls: f.controls,
      read() {
        const r = f.read();
        return r.error ? { errors: [r.error] } : { value: r.value };
      },
    };
  }
  if (!flatObject(schema)) return null;
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties).map(([name, s]) => [name, field(name, s, s.title || name, required.has(name), base)]);
  const note = required.size ? el('p', { class: 'hint' }, el('span', { class: 'req', 'aria-hidden': 'true' }, '*'), ' required') : null;
  return {
    root: el('div', { class: 'schema-form' }, note, ...fields.map(([, f]) => f.root)),
    controls: fields.flatMap(([, f]) => f.controls),
    read() {
      const value = {};
      const errors = [];
      for (const [name, f] of fields) {
        const r = f.read();
        if (r.error) errors.push(r.error);
        else if (!r.skip) value[name] = r.value;
      }
      return errors.length ? { errors } : { value };
    },
  };
}

// jsonForm is the fallback: the answer as JSON in a text area.
function jsonForm(label, rows = 4) {
  const id = `in${++serial}-json`;
  const area = el('textarea', { id, name: 'json', rows: String(rows), spellcheck: 'false' });
  return {
    root: el('div', { class: 'schema-form json' }, el('label', { for: id }, label, area)),
    controls: [area],
    read() {
      if (!area.value.trim()) return { errors: ['Write the answer as JSON.'] };
      try {
        return { value: JSON.parse(area.value) };
      } catch (e) {
        return { errors: [`Not JSON: ${e.message}`] };
      }
    },
  };
}

// choicesForm: a question's choices as buttons, one pressed at a time.
function choicesForm(choices) {
  let picked = null;
  const buttons = choices.map((c) => el('button', { type: 'button', class: 'secondary choice', 'aria-pressed': 'false', 'data-choice': c }, c));
  for (const b of buttons) {
    b.addEventListener('click', () => {
      picked = b.dataset.choice;
      for (const x of buttons) x.setAttribute('aria-pressed', String(x === b));
    });
  }
  return {
    root: el('div', { class: 'choices', role: 'group', 'aria-label': 'Choices' }, ...buttons),
    controls: buttons,
    read: () => (picked === null ? { errors: ['Pick one of the choices.'] } : { value: picked }),
  };
}

// textForm: a free answer to a question without choices or schema.
function textForm() {
  const id = `in${++serial}-text`;
  const area = el('textarea', { id, name: 'answer', rows: '2', 'aria-required': 'true' });
  return {
    root: el('div', { class: 'schema-form' }, el('label', { for: id }, 'Your answer', area)),
    controls: [area],
    read: () => (area.value.trim() ? { value: area.value } : { errors: ['Write an answer (or decline).'] }),
  };
}

// webLink answers the http(s) URL of s, else null: only those become links.
export function webLink(s) {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}

const KIND_LABEL = { question: 'asks you', client: 'a client tool: you supply its result', elicitation: 'a server asks you' };

// inputCard renders one pending input (agent: the agent whose task is
// shown; a sub-agent's input names its own). The card's collect() answers
// {decision} (the resume's decision without its tool_call_id) or {errors},
// which it shows; the rest (disable, setExpired, showErrors, close) is what
// app.js's approval cards have too.
export function inputCard(call, { onChange = () => {}, agent = '' } = {}) {
  const kind = call.kind;
  const id = call.tool_call_id;
  const expiry = el('p', { class: 'expiry' });
  const outcome = el('p', { class: 'outcome', role: 'status' });
  const errors = el('ul', { class: 'errors', role: 'alert' });
  const body = el('div', { class: 'answer' });
  const elicit = kind === 'elicitation';
  let form = null; // {root, controls, read}
  let declined = null; // the decision of a decline
  let done = false; // a URL elicitation: the person said they are done there

  const head = el('h3', {}, call.name,
    el('small', {}, ` — ${KIND_LABEL[kind] || 'input'}${call.server ? ` (${call.server})` : ''}`),
    call.agent && call.agent !== agent ? el('small', {}, ` (agent ${call.agent})`) : null);
  const question = call.question ? el('p', { class: 'question' }, call.question) : null;
  const args = kind === 'client' && call.input !== undefined
    ? el('pre', { class: 'input' }, JSON.stringify(call.input, null, 2)) : null;

  let doneBtn = null;
  if (elicit && call.url) {
    const u = webLink(call.url);
    doneBtn = el('button', { type: 'button', class: 'secondary done', 'aria-pressed': 'false' }, 'Done');
    doneBtn.addEventListener('click', () => {
      done = !done;
      doneBtn.setAttribute('aria-pressed', String(done));
      outcome.textContent = done ? 'Done at the link: this accepts it.' : '';
      onChange();
    });
    body.append(u
      ? el('p', { class: 'link' }, 'Open ', el('a', { href: u.href, target: '_blank', rel: 'noopener noreferrer' }, u.href),
        ` (${u.host}, in a new tab), finish there, then press Done.`)
      : el('p', { class: 'link' }, 'The server gives an address that is not a web link, so it is not opened here: ',
        el('code', {}, call.url)),
    el('div', { class: 'actions' }, doneBtn));
  } else if (kind === 'question' && Array.isArray(call.choices) && call.choices.length) {
    form = choicesForm(call.choices);
  } else if (call.schema !== undefined && call.schema !== null) {
    form = schemaForm(call.schema, kind === 'client' ? `Result of ${call.name}` : 'Answer')
      || jsonForm(kind === 'client' ? `Result of ${call.name} (JSON)` : 'Answer (JSON)');
  } else if (kind === 'question') {
    form = textForm();
  } else if (!elicit) {
    form = jsonForm(`Result of ${call.name} (JSON, any value)`);
  }
  if (form) body.append(form.root);

  // Declining: a question or a client tool is rejected with a reason the
  // agent sees; an elicitation is answered {action: decline}, as MCP has it.
  const declineBtn = el('button', { type: 'button', class: 'secondary decline', 'aria-expanded': elicit ? null : 'false' }, elicit ? 'Decline' : 'Decline…');
  const changeBtn = el('button', { type: 'button', class: 'secondary change', hidden: true }, 'Change');
  const reason = el('input', { name: 'reason', id: `reason-${id}`, autocomplete: 'off' });
  const declineForm = el('form', { class: 'decline-form', hidden: true },
    el('label', { for: `reason-${id}` }, 'Reason (the agent sees it)', reason),
    el('div', { class: 'row' }, el('button', { type: 'submit', class: 'danger' }, 'Decline'),
      el('button', { type: 'button', class: 'secondary', onclick: () => showDecline(false) }, 'Cancel')));
  const actions = el('div', { class: 'actions' }, declineBtn, changeBtn);

  const root = el('article', { class: `card input kind-${kind}`, 'data-call': id, 'data-kind': kind, 'aria-label': `Input for ${call.name}` },
    head, question, args, body, expiry, actions, declineForm, errors, outcome);

  function showDecline(show) {
    declineForm.hidden = !show;
    declineBtn.setAttribute('aria-expanded', String(show));
    if (show) reason.focus();
  }
  function setDeclined(d) {
    declined = d;
    for (const c of [...(form?.controls || []), ...(doneBtn ? [doneBtn] : [])]) c.disabled = !!d;
    declineBtn.hidden = !!d;
    changeBtn.hidden = !d;
    showDecline(false);
    errors.replaceChildren();
    outcome.textContent = d ? `You decline this${d.reason ? `: “${d.reason}”` : ''}. It goes out with the round.` : '';
    root.classList.toggle('declined', !!d);
    if (!d) (form?.controls[0] || doneBtn)?.focus();
    onChange();
  }
  declineBtn.addEventListener('click', () => {
    if (elicit) setDeclined({ action: 'answer', result: { action: 'decline' } });
    else showDecline(declineForm.hidden);
  });
  declineForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const r = reason.value.trim();
    setDeclined(r ? { action: 'reject', reason: r } : { action: 'reject' });
  });
  changeBtn.addEventListener('click', () => setDeclined(null));
  // What the person changes answers what the card said was wrong.
  body.addEventListener('input', () => errors.replaceChildren());
  body.addEventListener('click', (e) => {
    if (e.target.closest('button')) errors.replaceChildren();
  });

  const card = {
    call, kind: 'input', root, expiry, outcome, expired: false, sent: false, closed: false,
    // collect answers the card's decision, or shows why there is none yet.
    collect() {
      if (declined) return { decision: declined };
      let result;
      if (elicit && call.url) {
        if (!done) return card.showErrors(['Open the link, finish there, then press Done (or Decline).']);
        result = { action: 'accept' };
      } else if (!form) {
        result = elicit ? { action: 'accept' } : null;
      } else {
        const r = form.read();
        if (r.errors) return card.showErrors(r.errors);
        const problems = call.schema !== undefined && call.schema !== null && !(kind === 'question' && call.choices?.length)
          ? validate(call.schema, r.value, 'answer') : [];
        if (problems.length) return card.showErrors(problems);
        result = elicit ? { action: 'accept', content: r.value } : r.value;
      }
      errors.replaceChildren();
      return { decision: { action: 'answer', result } };
    },
    showErrors(list) {
      errors.replaceChildren(...list.map((m) => el('li', {}, m)));
      return { errors: list };
    },
    // focus moves to the field a message names ("….nights: …"), else
    // to the card's first control.
    focus(message = '') {
      const named = (form?.controls || []).find((c) => c.name && message.includes(`.${c.name}:`));
      const first = named || (form?.controls || []).find((c) => !c.disabled) || (doneBtn && !doneBtn.disabled ? doneBtn : declineBtn);
      first?.focus();
    },
    disable(on) {
      for (const b of root.querySelectorAll('button, input, textarea, select')) b.disabled = on;
      if (!on && declined) setDeclined(declined); // the answer's fields stay off while declined
    },
    // close leaves what was typed to read, and nothing to press.
    close() {
      card.closed = true;
      if (!card.expired) expiry.textContent = '';
      card.disable(true);
      actions.hidden = true;
      declineForm.hidden = true;
    },
    setExpired(text) {
      card.expired = true;
      root.classList.add('expired');
      expiry.textContent = text;
      card.close();
    },
  };
  if (call.expired) card.expired = true;
  return card;
}
