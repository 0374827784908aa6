/* nest-reactor dashboard: plain JavaScript, no build step. Served behind the app's guard. */
/* global document, window, fetch, URL, URLSearchParams, setTimeout, clearTimeout */
'use strict';

(function () {
  const API = new URL('api/', document.baseURI).pathname;
  const SVG = 'http://www.w3.org/2000/svg';
  const TERMINAL = ['completed', 'failed', 'halted', 'cancelled'];
  const state = { settings: { pollIntervalMs: 1500, statuses: [] }, reactors: [], timer: undefined, route: '' };

  // ---- DOM helpers (text only: nothing from the API is ever parsed as HTML) ----------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === false || v === null) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) el.append(c);
    return el;
  }
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) el.setAttribute(k, String(v));
    for (const c of children.flat(Infinity)) if (c) el.append(c);
    return el;
  }
  /** Replace the element's children with these (nested arrays flattened, empty ones left out). */
  const fill = (el, ...children) =>
    el.replaceChildren(...children.flat(Infinity).filter((c) => c !== '' && c != null && c !== false));
  const badge = (status) => h('span', { class: `badge st-${status}`, 'data-status': status }, status.replace('_', ' '));
  const time = (ms) => (ms ? new Date(ms).toLocaleString() : '');
  const duration = (ms) =>
    ms < 1000 ? `${ms} ms` : ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60000)} min`;
  const json = (value) => h('pre', { class: 'json' }, JSON.stringify(value, null, 2) ?? 'undefined');
  const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
  const short = (id) => (id.length > 12 ? `${id.slice(0, 8)}…` : id);

  // ---- API ----------------------------------------------------------------------------------------
  async function get(path, query) {
    const q = query
      ? `?${new URLSearchParams(Object.entries(query).filter(([, v]) => v !== '' && v !== undefined))}`
      : '';
    const reply = await fetch(API + path + q, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    const body = await reply.json().catch(() => ({}));
    if (!reply.ok) throw Object.assign(new Error(body.message || reply.statusText), { status: reply.status, body });
    return body;
  }
  async function post(path, body) {
    const reply = await fetch(API + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-reactor-dashboard': '1', accept: 'application/json' },
      body: JSON.stringify(body || {}),
    });
    const answer = await reply.json().catch(() => ({}));
    if (!reply.ok)
      throw Object.assign(new Error(answer.message || reply.statusText), { status: reply.status, body: answer });
    return answer;
  }

  // ---- Polling --------------------------------------------------------------------------------------
  function poll(route, work) {
    clearTimeout(state.timer);
    const tick = async () => {
      if (state.route !== route) return;
      try {
        await work();
      } catch (error) {
        showError(error);
      }
      if (state.route === route)
        state.timer = setTimeout(tick, state.pollMs ? state.pollMs() : state.settings.pollIntervalMs);
    };
    return tick();
  }

  // ---- A run's events (Server-Sent Events) -----------------------------------------------------
  // The run's page follows the run by its event stream: each event refreshes the page at once. With
  // the module's `liveEvents` every step's event comes, so polling is only a slow fallback; without
  // them the stream still tells the pause and the end. The stream closes after `run.finished`.
  let stream;
  function closeStream() {
    if (stream) stream.close();
    stream = undefined;
    document.documentElement.setAttribute('data-run-stream', 'closed');
  }
  function follow(route, runId, onEvent) {
    closeStream();
    if (typeof window.EventSource !== 'function') return;
    const source = new window.EventSource(`${API}runs/${encodeURIComponent(runId)}/events`, { withCredentials: true });
    stream = source;
    source.onopen = () => document.documentElement.setAttribute('data-run-stream', 'open');
    source.onmessage = (message) => {
      if (state.route !== route || stream !== source) return source.close();
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      const seen = Number(document.documentElement.getAttribute('data-run-events') || 0) + 1;
      document.documentElement.setAttribute('data-run-events', String(seen));
      if (event.type === 'run.finished') closeStream();
      onEvent(event);
    };
    // An EventSource reconnects by itself (sending the last id); one that gave up falls back to polling.
    source.onerror = () => {
      if (source.readyState === 2 && stream === source) {
        closeStream();
        onEvent(undefined);
      }
    };
  }
  /** The poll interval of a run's page: slow while its stream brings every step's event. */
  const runPollMs = () =>
    stream && state.settings.liveEvents ? state.settings.pollIntervalMs * 10 : state.settings.pollIntervalMs;
  function showError(error) {
    const bar =
      document.getElementById('error') || document.body.appendChild(h('div', { id: 'error', class: 'error-bar' }));
    bar.textContent = error ? `⚠ ${error.message}` : '';
    bar.hidden = !error;
  }

  // ---- Counts (header) ----------------------------------------------------------------------------
  // Counts are costly over many runs: the server shares one reading among requests and says in
  // `refreshAfterMs` when a newer one can be had; until then (and a poll interval at least) the
  // header keeps what it shows, unless the filter changed.
  const countsDue = { key: '', at: 0 };
  async function refreshCounts(filters) {
    const query = { reactor: filters.reactor, since: filters.since, until: filters.until };
    const key = JSON.stringify(query);
    if (key === countsDue.key && Date.now() < countsDue.at) return;
    const { counts, total, capped, refreshAfterMs } = await get('counts', query);
    countsDue.key = key;
    countsDue.at = Date.now() + Math.max(state.settings.pollIntervalMs, Number(refreshAfterMs) || 0);
    const nav = document.getElementById('counts');
    nav.replaceChildren(
      h('span', { class: 'total' }, `${total}${capped ? '+' : ''} runs`),
      ...state.settings.statuses.map((st) =>
        h(
          'a',
          { class: `count st-${st}${counts[st] ? '' : ' zero'}`, href: `#/?status=${st}`, 'data-count': st },
          `${st.replace('_', ' ')} `,
          h('b', {}, String(counts[st])),
        ),
      ),
    );
  }

  // ---- Runs table ---------------------------------------------------------------------------------
  function filtersFromHash() {
    const q = new URLSearchParams(window.location.hash.split('?')[1] || '');
    return {
      reactor: q.get('reactor') || '',
      status: q.get('status') || '',
      since: q.get('since') || '',
      until: q.get('until') || '',
      q: q.get('q') || '',
    };
  }
  // Search (issue 25): `tag:key=value`, `corr:<correlation id>`, else a run id; the runs API's params.
  function runsQuery(filters) {
    const { q, ...rest } = filters;
    const text = (q || '').trim();
    if (!text) return rest;
    if (text.startsWith('tag:')) return { ...rest, tag: text.slice(4) };
    if (text.startsWith('corr:')) return { ...rest, correlationId: text.slice(5) };
    return { ...rest, runId: text };
  }
  function toHash(filters) {
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    window.location.hash = `#/?${q}`;
  }
  function renderRuns(route) {
    const filters = filtersFromHash();
    const view = document.getElementById('view');
    const select = (name, options) =>
      h(
        'select',
        { name, onchange: (e) => toHash({ ...filters, [name]: e.target.value }) },
        h('option', { value: '' }, `every ${name}`),
        options.map((o) => h('option', { value: o, selected: filters[name] === o }, o)),
      );
    const dateInput = (name) =>
      h('input', {
        type: 'datetime-local',
        name,
        value: filters[name] ? toLocalInput(Number(filters[name])) : '',
        onchange: (e) =>
          toHash({ ...filters, [name]: e.target.value ? String(new Date(e.target.value).getTime()) : '' }),
      });
    const body = h('tbody', { id: 'runs' });
    const more = h('button', { class: 'more', hidden: true }, 'Load more');
    // Bulk actions (`api/runs/bulk`): the runs ticked in the table, kept across refreshes.
    const selected = new Set();
    const bulkInfo = h('span', { class: 'muted', 'data-bulk-info': '' });
    const bulkBar = h('section', { class: 'bulk', hidden: true });
    const bulk = async (action) => {
      const runIds = [...selected].slice(0, 100);
      const result = await post('runs/bulk', { action, runIds });
      const done = result.results.filter((r) => r.ok);
      const refused = result.results.filter((r) => !r.ok);
      selected.clear();
      shown = '';
      bulkInfo.textContent =
        `${action === 'retry' ? 'retried' : 'cancelled'} ${done.length}` +
        (refused.length > 0
          ? `, refused ${refused.length} (${refused.map((r) => `${short(r.runId)}: ${r.code || r.message}`).join('; ')})`
          : '');
      renderBulk();
      body.querySelectorAll('input[data-select]').forEach((box) => (box.checked = false));
    };
    const renderBulk = () => {
      bulkBar.hidden = selected.size === 0 && bulkInfo.textContent === '';
      bulkBar.replaceChildren(
        h('span', { 'data-bulk-count': String(selected.size) }, `${selected.size} selected`),
        ' ',
        selected.size > 0 ? confirmButton('Retry selected', `Retry ${selected.size} run(s)?`, () => bulk('retry')) : '',
        ' ',
        selected.size > 0
          ? confirmButton('Cancel selected', `Cancel ${selected.size} run(s)?`, () => bulk('cancel'), 'danger')
          : '',
        ' ',
        bulkInfo,
      );
    };
    const tick = (runId, checked) => {
      if (checked) selected.add(runId);
      else selected.delete(runId);
      bulkInfo.textContent = '';
      renderBulk();
    };
    const schedules = h('section', { class: 'schedules', id: 'schedules', hidden: true });
    const queues = h('section', { class: 'flow-queues', id: 'flow-queues', hidden: true });
    view.replaceChildren(
      schedules,
      h(
        'section',
        { class: 'filters' },
        select(
          'reactor',
          state.reactors.map((r) => r.name),
        ),
        select('status', state.settings.statuses),
        h('label', {}, 'from ', dateInput('since')),
        h('label', {}, 'to ', dateInput('until')),
        h('input', {
          type: 'search',
          name: 'q',
          class: 'search',
          placeholder: 'tag:key=value, run id or corr:<id>',
          title: 'tag:key=value finds runs by tag; corr:<id> by correlation id; anything else is a run id',
          value: filters.q,
          onchange: (e) => toHash({ ...filters, q: e.target.value.trim() }),
        }),
        h('a', { href: '#/', class: 'clear' }, 'clear'),
      ),
      queues,
      bulkBar,
      h(
        'table',
        { class: 'runs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h(
              'th',
              { class: 'select' },
              h('input', {
                type: 'checkbox',
                title: 'select every run shown',
                'data-select-all': '',
                onchange: (e) => {
                  body.querySelectorAll('input[data-select]').forEach((box) => {
                    box.checked = e.target.checked;
                    tick(box.dataset.select, e.target.checked);
                  });
                },
              }),
            ),
            ['Run', 'Reactor', 'Status', 'Created', 'Updated', 'Failed at'].map((t) => h('th', {}, t)),
          ),
        ),
        body,
      ),
      more,
    );
    let extra = [];
    let cursor;
    const row = (r) =>
      h(
        'tr',
        { 'data-run': r.runId, 'data-status': r.status },
        h(
          'td',
          { class: 'select' },
          h('input', {
            type: 'checkbox',
            'data-select': r.runId,
            checked: selected.has(r.runId),
            onchange: (e) => tick(r.runId, e.target.checked),
          }),
        ),
        h('td', {}, h('a', { href: `#/runs/${encodeURIComponent(r.runId)}`, class: 'mono' }, short(r.runId))),
        h('td', {}, r.reactorName),
        h('td', {}, badge(r.status), r.retriedFrom ? h('span', { class: 'muted' }, ' retry') : ''),
        h('td', {}, time(r.createdAt)),
        h('td', {}, time(r.updatedAt)),
        h('td', { class: 'failure', title: r.failureMessage || '' }, r.failedStep || ''),
      );
    more.addEventListener('click', async () => {
      const page = await get('runs', { ...runsQuery(filters), cursor });
      extra = extra.concat(page.runs);
      cursor = page.cursor;
      body.append(...page.runs.map(row));
      more.hidden = !cursor;
    });
    let shown = '';
    return poll(route, async () => {
      const [page] = await Promise.all([
        get('runs', runsQuery(filters)),
        refreshCounts(filters),
        refreshSchedules(schedules),
        refreshQueues(queues, filters.reactor),
      ]);
      if (extra.length === 0) cursor = page.cursor;
      more.hidden = !cursor;
      showError(undefined);
      // Rows are rebuilt only when a run changed, so a row is never replaced under the pointer.
      const text = JSON.stringify([page.runs, extra]);
      if (text === shown) return;
      shown = text;
      body.replaceChildren(...page.runs.map(row), ...extra.map(row));
      if (page.runs.length === 0) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No runs match.')));
      more.hidden = !cursor;
      showError(undefined);
    });
  }
  // Schedules (`api/schedules`): each with its timing, next tick and last run, above the runs.
  async function refreshSchedules(section) {
    const { schedules } = await get('schedules');
    section.hidden = schedules.length === 0;
    const timing = (sc) => (sc.cron ? `${sc.cron}${sc.tz ? ` (${sc.tz})` : ''}` : `every ${sc.everyMs} ms`);
    const last = (sc) =>
      sc.lastRun
        ? h(
            'span',
            {},
            h('a', { href: `#/runs/${encodeURIComponent(sc.lastRun.runId)}`, class: 'mono' }, short(sc.lastRun.runId)),
            ' ',
            sc.lastRun.status ? badge(sc.lastRun.status) : h('span', { class: 'muted' }, 'gone'),
          )
        : h('span', { class: 'muted' }, 'none yet');
    section.replaceChildren(
      h('h2', {}, 'Schedules'),
      h(
        'table',
        { class: 'runs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Schedule', 'Reactor', 'When', 'Next tick', 'Last run', 'Last tick'].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          schedules.map((sc) =>
            h(
              'tr',
              { 'data-schedule': sc.id },
              h('td', { class: 'mono' }, sc.id, sc.declared ? h('span', { class: 'muted' }, ' declared') : ''),
              h('td', {}, sc.reactor),
              h(
                'td',
                { class: 'mono' },
                timing(sc),
                sc.overlap === 'allow' ? h('span', { class: 'muted' }, ' overlap') : '',
              ),
              h(
                'td',
                {},
                sc.paused ? h('span', { class: 'muted' }, 'paused') : sc.nextTickAt ? time(sc.nextTickAt) : '',
              ),
              h('td', {}, last(sc)),
              h(
                'td',
                {},
                sc.lastTick ? time(sc.lastTick.at) : '',
                sc.lastTick && sc.lastTick.skipped
                  ? h('span', { class: 'muted' }, ` skipped (${sc.lastTick.skipped})`)
                  : '',
              ),
            ),
          ),
        ),
      ),
    );
  }
  // Queues per key (`api/flow/:reactor`), on a reactor's runs when it declares `concurrency: { key, limit }`:
  // per key its live runs against the limit, how many wait, and the next ones. Rebuilt only when it changed.
  const QUEUE_PEEK = 5;
  const queuesShown = new WeakMap();
  async function refreshQueues(section, reactor) {
    const flow = reactor ? await get(`flow/${encodeURIComponent(reactor)}`, { peek: QUEUE_PEEK }) : undefined;
    section.hidden = !flow || flow.limit === undefined;
    if (section.hidden) {
      section.replaceChildren();
      queuesShown.delete(section);
      return;
    }
    const text = JSON.stringify(flow);
    if (queuesShown.get(section) === text) return;
    queuesShown.set(section, text);
    const runLink = (runId) => h('a', { href: `#/runs/${encodeURIComponent(runId)}`, class: 'mono' }, short(runId));
    const next = (k) => [
      k.next.map((runId, i) => [i ? ' ' : '', runLink(runId)]),
      k.queued > k.next.length ? h('span', { class: 'muted' }, ` +${k.queued - k.next.length} more`) : '',
    ];
    section.replaceChildren(
      h('h2', {}, 'Queues per key', h('span', { class: 'muted' }, ` at most ${flow.limit} live per key`)),
      h(
        'table',
        { class: 'runs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Key', 'Live', 'Queued', 'Next'].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          flow.keys.length === 0
            ? h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No run holds or waits for a slot.'))
            : flow.keys.map((k) =>
                h(
                  'tr',
                  { 'data-key': k.key, class: k.live.length >= flow.limit ? 'full' : undefined },
                  h('td', { class: 'mono' }, k.key === '' ? h('span', { class: 'muted' }, '(one key)') : k.key),
                  h(
                    'td',
                    {
                      'data-live': k.live.length,
                      title: k.live.map((l) => `${l.runId} since ${time(l.since)}`).join('\n'),
                    },
                    `${k.live.length} / ${flow.limit}`,
                  ),
                  h('td', { 'data-queued': k.queued }, String(k.queued)),
                  h('td', { class: 'next' }, next(k)),
                ),
              ),
        ),
      ),
    );
  }
  function toLocalInput(ms) {
    const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
    return d.toISOString().slice(0, 16);
  }

  // ---- DAG ----------------------------------------------------------------------------------------
  /** Layers by dependency depth (longest path from a root), nodes in declaration order within a layer. */
  function layout(steps, tall) {
    const byName = new Map(steps.map((st) => [st.name, st]));
    const depth = new Map();
    const depthOf = (name, seen = new Set()) => {
      if (depth.has(name)) return depth.get(name);
      if (seen.has(name)) return 0;
      seen.add(name);
      const deps = (byName.get(name)?.dependsOn || []).filter((d) => byName.has(d));
      const d = deps.length ? 1 + Math.max(...deps.map((x) => depthOf(x, seen))) : 0;
      depth.set(name, d);
      return d;
    };
    const layers = [];
    for (const st of steps) (layers[depthOf(st.name)] = layers[depthOf(st.name)] || []).push(st);
    const W = 190,
      H = tall ? 70 : 54,
      GX = 70,
      GY = 22;
    const tallest = Math.max(...layers.map((l) => l.length));
    const pos = new Map();
    layers.forEach((layer, i) => {
      const offset = ((tallest - layer.length) * (H + GY)) / 2;
      layer.forEach((st, j) => pos.set(st.name, { x: 20 + i * (W + GX), y: 20 + offset + j * (H + GY) }));
    });
    return { pos, W, H, width: 40 + layers.length * (W + GX) - GX, height: 40 + tallest * (H + GY) - GY };
  }
  function dag(run, onPick) {
    // A third line on each node when any step was compensated or undone: the rollback marker.
    const { pos, W, H, width, height } = layout(
      run.steps,
      run.steps.some((st) => st.rollback),
    );
    const svg = s('svg', {
      class: 'dag',
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      role: 'img',
      'aria-label': `DAG of ${run.reactorName}`,
    });
    svg.append(
      s(
        'defs',
        {},
        s(
          'marker',
          {
            id: 'arrow',
            viewBox: '0 0 10 10',
            refX: 10,
            refY: 5,
            markerWidth: 7,
            markerHeight: 7,
            orient: 'auto-start-reverse',
          },
          s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }),
        ),
      ),
    );
    for (const st of run.steps)
      for (const dep of st.dependsOn) {
        const a = pos.get(dep),
          b = pos.get(st.name);
        if (!a || !b) continue;
        const x1 = a.x + W,
          y1 = a.y + H / 2,
          x2 = b.x,
          y2 = b.y + H / 2,
          mx = (x1 + x2) / 2;
        svg.append(
          s('path', {
            class: 'edge',
            d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`,
            'marker-end': 'url(#arrow)',
          }),
        );
      }
    for (const st of run.steps) {
      const p = pos.get(st.name);
      const progress = run.maps[st.name];
      const back = st.rollback ? ROLLBACK_MARK[st.rollback] : undefined;
      const node = s(
        'g',
        {
          class: `node st-${st.status}`,
          transform: `translate(${p.x} ${p.y})`,
          'data-step': st.name,
          'data-status': st.status,
          'data-attempts': st.attempts,
          'data-rollback': st.rollback,
          tabindex: 0,
        },
        s(
          'title',
          {},
          document.createTextNode(
            `${st.name} (${st.kind}): ${st.status}${st.attempts > 1 ? `, ${st.attempts} of ${st.maxAttempts} attempts` : ''}${st.rollback ? `, ${st.rollback}` : ''}`,
          ),
        ),
        s('rect', { width: W, height: H, rx: 9 }),
        s('text', { x: 12, y: 21, class: 'name' }, document.createTextNode(clip(st.name, 17))),
        s(
          'text',
          { x: 12, y: 40, class: 'kind' },
          document.createTextNode(
            clip(
              `${st.kind}${st.fanOut ? ' · fan-out' : ''}${st.reactor ? ` → ${st.reactor}` : ''}`,
              st.attempts > 1 ? 22 : 30,
            ),
          ),
        ),
        s('text', { x: W - 10, y: 21, class: 'status', 'text-anchor': 'end' }, document.createTextNode(st.status)),
        st.attempts > 1
          ? s(
              'text',
              { x: W - 10, y: 40, class: 'attempts', 'text-anchor': 'end' },
              document.createTextNode(`×${st.attempts}`),
            )
          : undefined,
        back
          ? s(
              'text',
              { x: 12, y: H - 12, class: `rollback ${back.outcome}`, 'data-outcome': back.outcome },
              document.createTextNode(back.text),
            )
          : undefined,
      );
      if (progress && progress.total > 0) {
        const ok = (progress.succeeded / progress.total) * (W - 2),
          bad = (progress.failed / progress.total) * (W - 2);
        node.append(
          s('rect', { x: 1, y: H - 6, width: ok, height: 5, class: 'bar-ok' }),
          s('rect', { x: 1 + ok, y: H - 6, width: bad, height: 5, class: 'bar-bad' }),
        );
      }
      node.addEventListener('click', () => onPick(st));
      svg.append(node);
    }
    return h('section', { class: 'dag-wrap' }, h('h3', {}, 'Steps'), svg, legend());
  }
  /** A node's rollback marker: what the rollback ran on the step and whether it worked. */
  const ROLLBACK_MARK = {
    compensated: { text: '↺ compensated ✓', outcome: 'ok' },
    'compensate-failed': { text: '↺ compensate failed ✗', outcome: 'failed' },
    undone: { text: '↺ undone ✓', outcome: 'ok' },
    'undo-failed': { text: '↺ undo failed ✗', outcome: 'failed' },
  };
  function legend() {
    return h(
      'div',
      { class: 'legend' },
      ['pending', 'running', 'paused', 'completed', 'failed', 'undone', 'skipped', 'halted'].map((st) =>
        h('span', { class: `key st-${st}` }, st),
      ),
    );
  }

  // ---- Trace timeline -------------------------------------------------------------------------------
  /** The trace entries of the rollback phase: every compensate, undo and undoAll. */
  const ROLLBACK = ['compensate', 'undo', 'undoAll'];
  /** An offset from the run's start, short enough for an axis label: 0, +40ms, +1.2s, +3m05s. */
  function offset(ms) {
    if (ms <= 0) return '0';
    if (ms < 1000) return `+${Math.round(ms)}ms`;
    if (ms < 60000) return `+${Number((ms / 1000).toFixed(ms < 10000 ? 2 : 1))}s`;
    const min = Math.floor(ms / 60000),
      sec = Math.round((ms % 60000) / 1000);
    return `+${min}m${sec ? `${String(sec).padStart(2, '0')}s` : ''}`;
  }
  /** Ticks every 1, 2 or 5 × 10^k ms: at most `most` of them after 0 over `span`. */
  function ticks(span, most) {
    const raw = Math.max(1, span / most);
    const pow = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * pow).find((x) => x >= raw) || raw;
    const out = [];
    for (let t = 0; t <= span + 1e-9; t += step) out.push(Math.round(t * 1000) / 1000);
    return out;
  }
  function timeline(run) {
    const start = run.trace.length ? run.trace[0].at : run.createdAt;
    const end = Math.max(run.finishedAt || 0, ...run.trace.map((e) => e.at), start + 1);
    const span = end - start || 1;
    const pct = (at) => `${Math.min(100, Math.max(0, ((at - start) / span) * 100))}%`;
    const place = (el, from, to) => {
      el.style.left = pct(from);
      if (to !== undefined) el.style.width = `${Math.max(0.6, ((Math.min(to, end) - from) / span) * 100)}%`;
      return el;
    };
    // The rollback phase: from the first compensate/undo entry to the last.
    const undoing = run.trace.filter((e) => ROLLBACK.includes(e.type));
    const phase = undoing.length ? { from: undoing[0].at, to: undoing[undoing.length - 1].at } : undefined;
    const band = () =>
      phase ? place(h('div', { class: 'tl-band', 'aria-hidden': 'true' }), phase.from, phase.to) : '';
    const marks = new Map();
    for (const e of undoing) {
      const ran = !/^no (undo|compensate) defined$|nothing to undo/.test(e.detail || '');
      const outcome = !ran ? 'none' : e.ok === false ? 'failed' : 'ok';
      const label = `${e.type} ${e.step}: ${outcome === 'none' ? e.detail : outcome}${
        outcome === 'failed' && e.detail ? ` (${e.detail})` : ''
      } at ${offset(e.at - start)}`;
      const mark = place(
        h(
          'span',
          {
            class: `tl-mark ${outcome}`,
            'data-step': e.step,
            'data-type': e.type,
            'data-outcome': outcome,
            'data-at': e.at - start,
            title: label,
            'aria-label': label,
          },
          outcome === 'failed' ? '✗' : outcome === 'ok' ? '✓' : '–',
        ),
        e.at,
      );
      marks.set(e.step, [...(marks.get(e.step) || []), mark]);
    }
    const shown = new Set();
    const rows = run.steps
      .filter((st) => st.startedAt !== undefined)
      .map((st) => {
        shown.add(st.name);
        const from = st.startedAt,
          to = st.finishedAt !== undefined ? st.finishedAt : TERMINAL.includes(run.status) ? from : Date.now();
        const bar = place(h('div', { class: `tl-bar st-${st.status}` }), from, to);
        return h(
          'div',
          { class: 'tl-row', 'data-step': st.name },
          h('span', { class: 'tl-name', title: st.name }, st.name, st.attempts > 1 ? ` ×${st.attempts}` : ''),
          h('div', { class: 'tl-track' }, band(), bar, marks.get(st.name) || []),
          h('span', { class: 'tl-dur' }, st.finishedAt !== undefined ? duration(st.finishedAt - from) : '…'),
        );
      });
    // The axis: ticks at offsets from the run's start, over the run's duration.
    const axis = h(
      'div',
      { class: 'tl-row tl-axis', 'data-start': start, 'data-span': span },
      h('span', { class: 'tl-name muted' }, 'since start'),
      h(
        'div',
        { class: 'tl-track' },
        ticks(span, 4).map((t) =>
          place(h('span', { class: `tl-tick${t / span > 0.85 ? ' end' : ''}`, 'data-ms': t }, offset(t)), start + t),
        ),
      ),
      h('span', { class: 'tl-dur' }, duration(span)),
    );
    const lane = phase
      ? h(
          'div',
          { class: 'tl-row tl-rollback', 'data-from': phase.from - start, 'data-to': phase.to - start },
          h('span', { class: 'tl-name' }, 'rollback'),
          h(
            'div',
            { class: 'tl-track' },
            place(
              h('div', {
                class: 'tl-band phase',
                title: `rollback ${offset(phase.from - start)} → ${offset(phase.to - start)}`,
              }),
              phase.from,
              phase.to,
            ),
            undoing
              .filter((e) => !shown.has(e.step))
              .map((e) => marks.get(e.step))
              .flat(),
          ),
          h('span', { class: 'tl-dur' }, duration(phase.to - phase.from)),
        )
      : '';
    const entries = h(
      'table',
      { class: 'trace' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['+ms', 'Δ', 'Event', 'Step', 'Detail'].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        run.trace.map((e, i) =>
          h(
            'tr',
            { class: `tr-${e.type}` },
            h('td', { class: 'mono' }, `+${e.at - start}`),
            h('td', { class: 'mono muted' }, i ? `${e.at - run.trace[i - 1].at}` : ''),
            h(
              'td',
              {},
              e.type +
                (e.attempt ? ` #${e.attempt}` : '') +
                (e.ok === false ? ' ✗' : e.ok === true && ROLLBACK.includes(e.type) ? ' ✓' : ''),
            ),
            h('td', {}, e.step),
            h(
              'td',
              { class: 'detail' },
              [
                e.detail,
                e.delayMs !== undefined ? `retry in ${e.delayMs} ms` : '',
                e.arguments ? JSON.stringify(e.arguments) : '',
              ]
                .filter(Boolean)
                .join(' · '),
            ),
          ),
        ),
      ),
    );
    return h(
      'section',
      { class: 'timeline' },
      h('h3', {}, 'Timeline'),
      h('div', { class: `tl${phase ? ' has-rollback' : ''}` }, axis, rows, lane),
      h('details', {}, h('summary', {}, `Trace (${run.trace.length} entries, ${duration(end - start)})`), entries),
    );
  }

  // ---- Run page -------------------------------------------------------------------------------------
  /** A button that asks before it acts; the question stays open while the run page re-renders. */
  function confirmButton(label, question, action, cls) {
    const key = label.toLowerCase();
    const wrap = h('span', { class: 'action' });
    const button = h('button', { class: cls || '', 'data-action': key }, label);
    const close = () => {
      state.confirming = undefined;
      wrap.replaceChildren(button);
    };
    const ask = () => {
      state.confirming = key;
      wrap.replaceChildren(
        h(
          'span',
          { class: 'confirm' },
          question,
          ' ',
          h(
            'button',
            {
              class: 'danger',
              'data-confirm': key,
              onclick: async (e) => {
                e.target.disabled = true;
                state.confirming = undefined;
                try {
                  await action();
                  showError(undefined);
                } catch (error) {
                  showError(error);
                }
                wrap.replaceChildren(button);
              },
            },
            `Yes, ${key}`,
          ),
          ' ',
          h('button', { onclick: close }, 'No'),
        ),
      );
    };
    button.addEventListener('click', ask);
    if (state.confirming === key) ask();
    else wrap.append(button);
    return wrap;
  }
  function payloadTemplate(payload) {
    if (!payload || payload.kind === 'any' || payload.kind === 'dto') return {};
    if (payload.kind === 'value')
      return { string: '', number: 0, integer: 0, boolean: true, array: [], object: {} }[payload.type] ?? null;
    return Object.fromEntries(
      payload.fields.map((f) => [
        f.name,
        { string: '', number: 0, integer: 0, boolean: true, array: [], object: {}, date: new Date().toISOString() }[
          f.type
        ] ?? null,
      ]),
    );
  }
  function interruptForm(run, interrupt) {
    const area = h(
      'textarea',
      { rows: 5, name: 'payload', 'data-interrupt': interrupt.path },
      JSON.stringify(payloadTemplate(interrupt.payload), null, 2),
    );
    const errors = h('div', { class: 'field-errors' });
    const describe =
      interrupt.payload && interrupt.payload.kind === 'fields'
        ? interrupt.payload.fields.map((f) => `${f.name}: ${f.type}${f.optional ? '?' : ''}`).join(', ')
        : interrupt.payload && interrupt.payload.kind === 'dto'
          ? `a ${interrupt.payload.name}`
          : 'any JSON value';
    return h(
      'form',
      {
        class: 'interrupt',
        onsubmit: async (e) => {
          e.preventDefault();
          errors.replaceChildren();
          let payload;
          try {
            payload = JSON.parse(area.value);
          } catch {
            errors.append(h('div', {}, 'The payload is not JSON.'));
            return;
          }
          try {
            await post(`runs/${encodeURIComponent(run.runId)}/continue`, { step: interrupt.path, payload });
            refreshRun();
          } catch (error) {
            const fe = (error.body && error.body.fieldErrors) || {};
            errors.append(
              h('div', {}, error.message),
              ...Object.entries(fe).map(([k, v]) => h('div', {}, `${k}: ${v.join('; ')}`)),
            );
            if (error.body && error.body.attemptsLeft !== undefined)
              errors.append(h('div', {}, `${error.body.attemptsLeft} attempts left`));
          }
        },
      },
      h('h3', {}, `Waiting at ${interrupt.path}`),
      h(
        'p',
        { class: 'muted' },
        `Paused ${time(interrupt.pausedAt)}`,
        interrupt.correlationId ? ` · correlation id ${interrupt.correlationId}` : '',
        interrupt.timeoutAt ? ` · times out ${time(interrupt.timeoutAt)}` : '',
        ` · payload: ${describe}`,
      ),
      area,
      errors,
      h('button', { type: 'submit', class: 'primary' }, 'Answer'),
    );
  }
  function failureBox(failure) {
    const causes = [];
    for (let c = failure.cause; c; c = c.cause)
      causes.push(
        h(
          'li',
          {},
          `${c.reactorName}${c.stepName ? ` › ${c.stepName}` : ''}${c.elementIndex !== undefined ? ` [element ${c.elementIndex}]` : ''}: ${c.message}`,
        ),
      );
    return h(
      'section',
      { class: 'failure-box' },
      h('h3', {}, `Failed at ${failure.stepName || '(before any step)'}`, h('span', { class: 'code' }, failure.code)),
      h('p', {}, `${failure.exceptionClass}: ${failure.errorMessage}`),
      h('p', { class: 'muted' }, failure.message),
      causes.length ? h('ul', { class: 'causes' }, causes) : '',
      failure.fieldErrors ? json(failure.fieldErrors) : '',
      failure.rollbackFailures.length
        ? h(
            'div',
            { class: 'rollback-failures' },
            h('h4', {}, `${failure.rollbackFailures.length} rollback failure(s)`),
            h(
              'ul',
              {},
              failure.rollbackFailures.map((f) =>
                h(
                  'li',
                  {},
                  `${f.kind} of ${f.reactorName ? `${f.reactorName} › ` : ''}${f.step}${f.elementIndex !== undefined ? ` [element ${f.elementIndex}]` : ''} (${f.reason}): ${f.message}`,
                ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'Rollback complete: no rollback failures.'),
    );
  }
  function mapPanel(run, step, progress, path) {
    const pct = (n) => `${progress.total ? (n / progress.total) * 100 : 0}%`;
    const ok = h('div', { class: 'bar-ok' }),
      bad = h('div', { class: 'bar-bad' }),
      rest = h('div', { class: 'bar-flight' });
    ok.style.width = pct(progress.succeeded);
    bad.style.width = pct(progress.failed + progress.halted);
    rest.style.width = pct(Math.max(0, progress.dispatched - progress.settled));
    const list = h('div', { class: 'elements' });
    const drill = h('button', { 'data-drill': path }, 'Failed elements');
    let from = 0;
    const load = async () => {
      const page = await get(`runs/${encodeURIComponent(run.runId)}/maps/${encodeURIComponent(path)}/elements`, {
        from,
      });
      list.append(
        ...page.elements.map((e) =>
          h(
            'div',
            { class: 'element' },
            h('b', {}, `#${e.index}`),
            ' ',
            badge(e.status),
            ' ',
            e.failure ? `${e.failure.stepName || ''}: ${e.failure.errorMessage}` : e.reason || '',
          ),
        ),
      );
      from = page.next;
      drill.textContent = from !== undefined ? `More (from #${from})` : 'Failed elements';
      drill.disabled = from === undefined;
      if (from === undefined && list.childElementCount === 0)
        list.append(h('div', { class: 'muted' }, 'No failed elements.'));
    };
    drill.addEventListener('click', () => load().catch(showError));
    return h(
      'section',
      { class: 'map', id: `map-${path}` },
      h(
        'h3',
        {},
        `Map ${step}`,
        h('span', { class: 'muted' }, ` ${progress.mode === 'fanOut' ? 'fan-out' : 'inline'}`),
      ),
      h('div', { class: 'progress', title: `${progress.settled}/${progress.total}` }, ok, bad, rest),
      h(
        'p',
        {},
        `${progress.settled} / ${progress.total} settled · ${progress.succeeded} succeeded · ${progress.failed} failed${progress.halted ? ` · ${progress.halted} halted` : ''}${progress.skipped ? ` · ${progress.skipped} skipped` : ''}${progress.failedIndex !== undefined ? ` · first failure at #${progress.failedIndex}` : ''}${progress.done ? ' · done' : ''}`,
      ),
      progress.failed + progress.halted > 0 ? drill : '',
      list,
    );
  }
  function runBody(run, path) {
    const children = Object.entries(run.children);
    const pick = (st) => {
      const target = document.getElementById(
        st.kind === 'compose'
          ? `child-${path}${st.name}`
          : st.kind === 'map'
            ? `map-${path}${st.name}`
            : `step-${path}${st.name}`,
      );
      if (target) target.scrollIntoView({ behavior: 'smooth', block: 'start' });
    };
    return [
      dag(run, pick),
      run.failure ? failureBox(run.failure) : '',
      run.halt
        ? h('section', { class: 'halt' }, h('h3', {}, `Halted at ${run.halt.step}`), h('p', {}, run.halt.reason))
        : '',
      run.cancellation
        ? h(
            'section',
            { class: 'halt' },
            h('h3', {}, 'Cancelled'),
            h('p', {}, run.cancellation.reason),
            run.cancellation.rollbackFailures.length ? json(run.cancellation.rollbackFailures) : '',
          )
        : '',
      run.rollback
        ? h(
            'section',
            { class: 'halt' },
            h('h3', {}, `Rolling back (to ${run.rollback.target})`),
            run.rollback.compensate.length
              ? h('p', {}, `Compensation of ${run.rollback.compensate.join(', ')} did not finish yet`)
              : '',
          )
        : '',
      Object.entries(run.maps).map(([step, progress]) => mapPanel(run, step, progress, path + step)),
      timeline(run),
      h(
        'section',
        { class: 'grid' },
        h('div', {}, h('h3', {}, 'Inputs'), json(run.inputs)),
        h(
          'div',
          {},
          h('h3', {}, 'Steps'),
          h(
            'table',
            { class: 'steps' },
            h(
              'tbody',
              {},
              run.steps.map((st) =>
                h(
                  'tr',
                  { id: `step-${path}${st.name}` },
                  h('td', {}, st.name),
                  h('td', {}, badge(st.status)),
                  h(
                    'td',
                    { class: 'muted' },
                    `${st.attempts}/${st.maxAttempts} attempts${st.rollback ? ` · ${st.rollback}` : ''}`,
                  ),
                ),
              ),
            ),
          ),
          h('p', { class: 'muted' }, `Undo stack: ${run.undoStack.join(' → ') || '(empty)'}`),
        ),
        h(
          'div',
          {},
          h('h3', {}, 'Results'),
          h('details', {}, h('summary', {}, Object.keys(run.results).join(', ') || '(none)'), json(run.results)),
          run.status === 'completed' ? h('div', {}, h('h3', {}, 'Value'), json(run.value)) : '',
        ),
      ),
      Object.keys(run.asyncUnits).length
        ? h(
            'section',
            {},
            h('h3', {}, 'Async units'),
            h(
              'ul',
              {},
              Object.entries(run.asyncUnits).map(([step, u]) =>
                h(
                  'li',
                  {},
                  `${step}: `,
                  h('a', { href: `#/runs/${encodeURIComponent(u.runId)}` }, `${u.reactorName} ${short(u.runId)}`),
                  ' ',
                  badge(u.status),
                ),
              ),
            ),
          )
        : '',
      children.map(([name, child]) =>
        h(
          'details',
          { class: 'child', id: `child-${path}${name}`, open: child.status !== 'completed' },
          h('summary', {}, `Composed ${name} → ${child.reactorName} `, badge(child.status)),
          runBody(child, `${path}${name}.`),
        ),
      ),
    ];
  }
  let refreshRun = () => undefined;
  function renderRun(route, runId) {
    state.confirming = undefined;
    const view = document.getElementById('view');
    view.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    let last = '';
    let soon;
    state.pollMs = runPollMs;
    follow(route, runId, () => {
      // Events come in bursts (a step ends, the next starts): one refresh for a burst.
      clearTimeout(soon);
      soon = setTimeout(() => state.route === route && refreshRun(), 30);
    });
    refreshRun = () =>
      poll(route, async () => {
        const run = await get(`runs/${encodeURIComponent(runId)}`);
        const text = JSON.stringify(run);
        if (text === last) return;
        last = text;
        const actions = h(
          'div',
          { class: 'actions' },
          run.actions.retry
            ? confirmButton(
                'Retry',
                'Run it again with the same inputs?',
                async () => {
                  const answer = await post(`runs/${encodeURIComponent(runId)}/retry`);
                  if (answer.runId !== runId) window.location.hash = `#/runs/${encodeURIComponent(answer.runId)}`;
                  else refreshRun();
                },
                'primary',
              )
            : '',
          run.actions.undo
            ? confirmButton(
                'Undo',
                'Undo every completed step of this run?',
                async () => {
                  await post(`runs/${encodeURIComponent(runId)}/undo`);
                  refreshRun();
                },
                'danger',
              )
            : '',
          run.actions.cancel
            ? confirmButton(
                'Cancel',
                'Cancel this run and undo its completed steps?',
                async () => {
                  await post(`runs/${encodeURIComponent(runId)}/cancel`, { reason: 'cancelled from the dashboard' });
                  refreshRun();
                },
                'danger',
              )
            : '',
        );
        const interrupts = [];
        const collect = (r) => {
          interrupts.push(...r.pendingInterrupts);
          Object.values(r.children).forEach(collect);
        };
        collect(run);
        const scroll = window.scrollY;
        fill(
          view,
          h(
            'section',
            { class: 'run-head', 'data-run': run.runId, 'data-status': run.status },
            h(
              'div',
              {},
              h('a', { href: '#/' }, '← runs'),
              h('h2', {}, run.reactorName, ' ', badge(run.status)),
              h('p', { class: 'muted mono' }, run.runId),
              h(
                'p',
                { class: 'muted' },
                `created ${time(run.createdAt)} · updated ${time(run.updatedAt)}`,
                run.finishedAt ? ` · took ${duration(run.finishedAt - run.createdAt)}` : '',
                run.currentSteps.length ? ` · at ${run.currentSteps.join(', ')}` : '',
                run.sleeping ? ` · sleeping at ${run.sleeping.step} until ${time(run.sleeping.wakeAt)}` : '',
              ),
              run.retriedFrom
                ? h(
                    'p',
                    {},
                    'Retry #',
                    String(run.retryCount),
                    ' of ',
                    h('a', { href: `#/runs/${encodeURIComponent(run.retriedFrom)}` }, short(run.retriedFrom)),
                  )
                : '',
            ),
            actions,
          ),
          run.status === 'paused' ? interrupts.map((i) => interruptForm(run, i)) : '',
          runBody(run, ''),
        );
        window.scrollTo(0, scroll);
        showError(undefined);
        refreshCounts({}).catch(() => undefined);
      });
    return refreshRun();
  }

  // ---- Router ---------------------------------------------------------------------------------------
  function route() {
    const hash = window.location.hash || '#/';
    state.route = hash;
    state.pollMs = undefined;
    closeStream();
    showError(undefined);
    const run = /^#\/runs\/([^?]+)/.exec(hash);
    if (run) return renderRun(hash, decodeURIComponent(run[1]));
    return renderRuns(hash);
  }
  async function start() {
    try {
      const [settings, { reactors }] = await Promise.all([get('settings'), get('reactors')]);
      state.settings = settings;
      state.reactors = reactors;
    } catch (error) {
      showError(error);
    }
    window.addEventListener('hashchange', route);
    route();
  }
  start();
})();
