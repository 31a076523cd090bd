// The console's client of the Hitch HTTP API (docs/api.md): settings, JSON
// calls, and streams that reconnect with Last-Event-ID.

import { events } from './sse.js';

const KEY = 'hitch-console';

// Settings are the API's base URL ('' = this page's origin), the dev-auth
// user name and a bearer token (which wins over the user name).
export function loadSettings() {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) || '{}');
    return { base: s.base || '', user: s.user || '', token: s.token || '' };
  } catch {
    return { base: '', user: '', token: '' };
  }
}

export function saveSettings(s) {
  localStorage.setItem(KEY, JSON.stringify(s));
}

// APIError is a refusal of the API: the status and the body's error code.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function errorOf(resp) {
  let code = 'http_' + resp.status;
  let message = `${resp.status} ${resp.statusText}`;
  try {
    const b = await resp.json();
    if (b && b.error) {
      code = b.error.code || code;
      message = b.error.message || message;
    }
  } catch { /* not the JSON error body (a proxy's page, say) */ }
  return new APIError(resp.status, code, message);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class API {
  constructor(settings) {
    this.s = settings;
  }

  url(path) {
    const base = (this.s.base || location.origin).replace(/\/+$/, '');
    return base + path;
  }

  headers(extra = {}) {
    const h = { ...extra };
    const cred = this.s.token || this.s.user;
    if (cred) h.Authorization = 'Bearer ' + cred;
    return h;
  }

  async fetch(method, path, body, extra = {}) {
    const init = { method, headers: this.headers(extra), cache: 'no-store' };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
    return fetch(this.url(path), init);
  }

  // json calls a route and answers its JSON body, or throws an APIError.
  async json(method, path, body) {
    const resp = await this.fetch(method, path, body);
    if (!resp.ok) throw await errorOf(resp);
    if (resp.status === 204) return null;
    return resp.json();
  }

  // stream POSTs body to path asking for SSE and calls onEvent(name, data,
  // id) for each event until the request completes, pauses or fails. When
  // the connection drops first it reconnects to the request's events with
  // Last-Event-ID, and calls onState('reconnecting' | 'reconnected',
  // attempt). ids ({agent, task_id, request_id}) name the request when it is
  // known beforehand (a resume); a new request names itself in
  // request_started. A refusal of the POST throws an APIError.
  async stream(path, body, ids, onEvent, onState = () => {}) {
    const req = { ...ids };
    let last = null;
    let resp = await this.fetch('POST', path, body, { Accept: 'text/event-stream' });
    if (!resp.ok) throw await errorOf(resp);
    for (let attempt = 0; ; ) {
      let terminal = null;
      try {
        for await (const ev of events(resp.body)) {
          if (ev.id !== null) last = ev.id;
          attempt = 0; // the stream flows again: a later drop starts counting anew
          let data = {};
          try { data = JSON.parse(ev.data); } catch { /* keep {} */ }
          if (ev.event === 'request_started') {
            req.task_id = data.task_id;
            req.request_id = data.request_id;
          }
          if (ev.event === 'error' && data.code === 'request_lost') continue; // not an outcome: follow again
          onEvent(ev.event, data, ev.id);
          if (ev.event === 'request_complete' || ev.event === 'error') terminal = data;
        }
      } catch (e) {
        console.warn('hitch: the event stream broke; reconnecting:', String(e));
      }
      if (terminal) return terminal;
      if (!req.task_id || !req.request_id) {
        throw new APIError(0, 'stream_cut', 'The connection dropped before the request started; reload the task.');
      }
      for (;;) {
        attempt++;
        if (attempt > 8) throw new APIError(0, 'stream_cut', 'The connection dropped and could not be resumed.');
        onState('reconnecting', attempt);
        await sleep(Math.min(250 * 2 ** (attempt - 1), 4000));
        const p = `/agents/${enc(req.agent)}/tasks/${enc(req.task_id)}/requests/${enc(req.request_id)}/events`;
        const h = { Accept: 'text/event-stream' };
        if (last !== null) h['Last-Event-ID'] = last;
        try {
          resp = await this.fetch('GET', p, undefined, h);
        } catch {
          continue; // still unreachable
        }
        if (resp.ok) break;
        if (resp.status >= 500) continue;
        throw await errorOf(resp); // 410 events_expired, 404, 401: final
      }
      onState('reconnected', attempt);
    }
  }
}

export const enc = encodeURIComponent;
