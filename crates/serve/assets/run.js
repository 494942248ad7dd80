'use strict';
// A run's page: the DAG (drawn by the server as SVG, one <g class="node STATUS"
// data-task="ID"> per task) kept live from the run's Server-Sent Events, totals and the
// timeline refreshed from the API while it runs, a task's details on click, cancel, resume
// (of a run that stopped before completing), and the report (and, for research, the rounds)
// when done. Text from the run (sections,
// errors, titles) is only ever set as textContent.
(function () {
  const runId = document.body.dataset.run;
  const api = '/api/runs/' + encodeURIComponent(runId);
  const page = '/runs/' + encodeURIComponent(runId);
  const zh = document.documentElement.lang === 'zh';
  const LABELS = zh
    ? { pending: '… 等待', running: '▶ 运行中', completed: '✓ 已完成', failed: '✗ 失败', blocked: '⊘ 未执行' }
    : { pending: '… pending', running: '▶ running', completed: '✓ completed', failed: '✗ failed', blocked: '⊘ blocked' };
  const $ = (id) => document.getElementById(id);
  // The latest status each task was given by an event, re-applied when the DAG is redrawn.
  let statuses = new Map();
  let selected = null;
  let events = null;
  let live = false;
  let dirty = false;
  let ganttAt = 0;
  // A totals refresh asked for by a model-call event, so tokens and cost follow the calls
  // (at most one request in flight and one every 250 ms, however fast the calls come).
  let totalsDue = false;
  let totalsAt = 0;

  function nodeOf(task) {
    for (const g of document.querySelectorAll('#dag g.node')) {
      if (g.dataset.task === String(task)) return g;
    }
    return null;
  }

  function paint(task, status) {
    const g = nodeOf(task);
    if (!g) return;
    g.classList.remove('pending', 'running', 'completed', 'failed', 'blocked');
    g.classList.add(status);
    g.dataset.status = status;
    const label = g.querySelector('text.status');
    if (label) label.textContent = LABELS[status];
  }

  function setStatus(task, status) {
    statuses.set(String(task), status);
    paint(task, status);
  }

  function wireNodes() {
    for (const g of document.querySelectorAll('#dag g.node')) {
      const m = /\b(pending|running|completed|failed|blocked)\b/.exec(g.getAttribute('class') || '');
      g.dataset.status = m ? m[1] : 'pending';
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.addEventListener('click', () => select(g.dataset.task));
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter') select(g.dataset.task); });
      if (g.dataset.task === selected) g.classList.add('selected');
    }
    for (const [task, status] of statuses) paint(task, status);
  }

  async function getText(url) {
    const resp = await fetch(url);
    if (!resp.ok) throw new Error(url + ': ' + resp.status);
    return resp.text();
  }

  async function getJson(url) {
    const resp = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!resp.ok) throw new Error(url + ': ' + resp.status);
    return resp.json();
  }

  async function redrawDag() {
    try {
      $('dag').innerHTML = await getText(page + '/dag.svg');
      wireNodes();
    } catch (e) {
      // No plan yet (research still planning): the next run_started tries again.
    }
  }

  async function redrawGantt() {
    try {
      $('gantt').innerHTML = await getText(page + '/gantt.svg');
    } catch (e) {
      // As above.
    }
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = ms / 1000;
    if (s < 120) return s.toFixed(1) + ' s';
    return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  }

  // A run whose calls had no price is unpriced, not free: never a bare 0.0000.
  function costLabel(c) {
    if (!c) return 'no prices';
    const missing = (c.unpriced_models || []).join(', ');
    const priced = Object.keys(c.by_model || {}).length > 0 || !missing;
    if (!priced) return 'unpriced (no price for ' + missing + ')';
    return c.total.toFixed(4) + ' ' + c.currency + (missing ? ' (unpriced: ' + missing + ')' : '');
  }

  function showTotals(run) {
    const st = run.stats || {};
    const ended = (st.completed || 0) + (st.failed || 0) + (st.blocked || 0);
    $('t-progress').textContent = ended + ' / ' + (st.tasks || 0) +
      (st.failed ? ', ' + st.failed + ' failed' : '') + (st.blocked ? ', ' + st.blocked + ' blocked' : '');
    const u = st.usage || {};
    const tokens = (u.prompt_tokens || 0) + (u.completion_tokens || 0) + (u.reasoning_tokens || 0);
    $('t-tokens').textContent = tokens.toLocaleString();
    $('t-cost').textContent = costLabel(st.cost);
    let elapsed = run.elapsed_ms;
    if (elapsed === undefined && run.started_at && run.finished_at) {
      elapsed = new Date(run.finished_at) - new Date(run.started_at);
    }
    $('t-elapsed').textContent = fmtMs(elapsed);
    $('t-eta').textContent = run.live ? fmtMs(run.eta_ms) : '–';
    if (run.queue) {
      // Over the queue (serve --nats): every worker that took the run, so a hand-over shows.
      const q = run.queue;
      const workers = (q.workers && q.workers.length) ? q.workers : (q.worker ? [q.worker] : []);
      $('t-worker').textContent = (workers.length ? workers.join(' → ') : 'none yet') +
        (q.deliveries > 1 ? ' (delivery ' + q.deliveries + ')' : '');
      $('t-queue').hidden = false;
    }
    // With --batch-api: the provider batch the run waits on, and its state.
    const pb = run.provider_batch;
    if (pb) {
      const ended = ['completed', 'failed', 'expired', 'cancelled'].includes(pb.state);
      $('t-batch').textContent = (ended ? '' : 'waiting on ') + pb.id + ' (' + pb.state +
        (pb.total ? ', ' + pb.completed + ' of ' + pb.total + ' done' : '') +
        (pb.calls ? '; ' + pb.calls + (pb.calls === 1 ? ' call' : ' calls') + ' of this run' : '') +
        ')';
      $('t-batch-box').hidden = false;
    }
    // Why it stopped, as run.json says: the loop's reason, the run's own, a failed plan.
    const stop = [run.loop_stop_reason, run.stop_reason].filter(Boolean).join(', the round: ');
    const why = stop || (run.plan_fallback ? 'planning failed: ' + run.plan_fallback : '');
    if (why) {
      $('t-stop').textContent = why;
      $('t-stop-box').hidden = false;
    }
    const badge = $('status');
    badge.textContent = run.status;
    badge.className = 'badge ' + run.status;
    badge.dataset.status = run.status;
    if (run.error) {
      $('error').textContent = run.error;
      $('error').hidden = false;
    }
  }

  async function refresh() {
    let run;
    try {
      run = await getJson(api + '?tasks=false');
    } catch (e) {
      return;
    }
    showTotals(run);
    // The timeline is redrawn by the server: at most every few seconds while running.
    if ((dirty && Date.now() - ganttAt > 3000) || !run.live) {
      dirty = false;
      ganttAt = Date.now();
      redrawGantt();
    }
    if (run.kind === 'research') loadRounds();
    if (live && !run.live) finished();
    live = run.live;
    $('cancel').hidden = !run.live;
    showResume(run);
    if (!run.live) showReport();
  }

  function totalsSoon() {
    if (totalsDue) return;
    totalsDue = true;
    setTimeout(async () => {
      totalsAt = Date.now();
      await refresh();
      totalsDue = false;
    }, Math.max(0, 250 - (Date.now() - totalsAt)));
  }

  function finished() {
    if (events) events.close();
    events = null;
    statuses = new Map();
    redrawDag();
    if (selected !== null) select(selected);
  }

  async function showReport() {
    const section = $('report');
    if (!section.hidden) return;
    try {
      const resp = await fetch(api + '/report', { headers: { Accept: 'text/html' } });
      if (!resp.ok) return;
      $('report-frame').srcdoc = await resp.text();
      section.hidden = false;
    } catch (e) {
      // No report (a run stopped before it): nothing to show.
    }
  }

  function item(dl, term, value) {
    if (value === null || value === undefined || value === '') return;
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = value;
    dl.append(dt, dd);
  }

  function list(title, rows) {
    const frag = document.createDocumentFragment();
    const h = document.createElement('h4');
    h.textContent = title + ' (' + rows.length + ')';
    const ul = document.createElement('ul');
    for (const r of rows) {
      const li = document.createElement('li');
      li.textContent = r;
      ul.appendChild(li);
    }
    frag.append(h, ul);
    return frag;
  }

  async function select(task) {
    selected = String(task);
    for (const g of document.querySelectorAll('#dag g.node')) {
      g.classList.toggle('selected', g.dataset.task === selected);
    }
    let info;
    try {
      info = await getJson(api + '/sections/' + encodeURIComponent(selected));
    } catch (e) {
      return;
    }
    if (selected !== String(task)) return;
    const t = info.task;
    const panel = $('detail');
    panel.replaceChildren();
    panel.dataset.task = selected;
    const h = document.createElement('h3');
    h.textContent = 'Task ' + t.id + ' · ' + t.description;
    const dl = document.createElement('dl');
    item(dl, 'Status', LABELS[t.status] || t.status);
    item(dl, 'Wave', t.wave);
    item(dl, 'Attempts', t.attempts);
    item(dl, 'Error', t.error);
    item(dl, 'Blocked by', t.blocked_by === null || t.blocked_by === undefined ? null : 'task ' + t.blocked_by);
    const u = t.usage || {};
    item(dl, 'Tokens', (u.prompt_tokens || 0) + ' in' +
      (u.cached_tokens ? ' (' + u.cached_tokens + ' cached)' : '') + ', ' + (u.completion_tokens || 0) + ' out');
    panel.append(h, dl);
    panel.appendChild(list('Model calls', (info.model_calls || []).map((c) =>
      c.role + ' #' + c.attempt + ', ' + fmtMs(c.duration_ms) + (c.error ? ', error: ' + c.error : ''))));
    panel.appendChild(list('Tool calls', (t.tool_calls || []).map((c) =>
      c.tool + ' #' + c.attempt + ' ' + c.outcome + ', ' + fmtMs(c.duration_ms) + (c.error ? ', ' + c.error : ''))));
    const sh = document.createElement('h4');
    sh.textContent = 'Section';
    const pre = document.createElement('pre');
    pre.className = 'section';
    pre.textContent = info.section || '(no section yet)';
    panel.append(sh, pre);
  }

  async function loadRounds() {
    let rounds;
    try {
      rounds = await getJson(api + '/rounds');
    } catch (e) {
      return;
    }
    if (!rounds.length) return;
    const box = $('rounds-body');
    box.replaceChildren();
    for (const r of rounds) {
      const div = document.createElement('div');
      div.className = 'round';
      div.dataset.round = r.round;
      const h = document.createElement('h3');
      const ev = r.evaluation;
      h.textContent = 'Round ' + r.round + (ev ? ': overall ' + ev.overall_score + ', correctness ' +
        (ev.dimensions ? ev.dimensions.correctness : '–') + (ev.is_successful ? ', successful' : ', not successful') : ' (not evaluated)');
      div.appendChild(h);
      const refl = r.reflection;
      if (refl) {
        for (const key of ['lessons_learned', 'root_causes', 'incorrect_assumptions', 'alternative_approaches']) {
          if (Array.isArray(refl[key]) && refl[key].length) {
            div.appendChild(list('Reflection: ' + key.replace(/_/g, ' '), refl[key].map(String)));
          }
        }
      }
      box.appendChild(div);
    }
    $('rounds').hidden = false;
  }

  function onEvent(ev) {
    switch (ev.type) {
      case 'run_started':
        statuses = new Map();
        redrawDag();
        break;
      case 'task_ready':
        break;
      case 'llm_call':
        totalsSoon();
        break;
      case 'task_started':
        setStatus(ev.task, 'running');
        dirty = true;
        break;
      case 'task_completed':
        setStatus(ev.task, 'completed');
        dirty = true;
        break;
      case 'task_failed':
        setStatus(ev.task, 'failed');
        dirty = true;
        break;
      case 'task_blocked':
        setStatus(ev.task, 'blocked');
        break;
      case 'evaluation':
      case 'reflection':
      case 'round_finished':
        loadRounds();
        break;
      default:
        break;
    }
    if (selected !== null && ev.task !== undefined && String(ev.task) === selected &&
        (ev.type === 'task_completed' || ev.type === 'task_failed' || ev.type === 'task_blocked')) {
      select(selected);
    }
  }

  function subscribe(after) {
    events = new EventSource(api + '/events?after=' + after);
    events.onmessage = (m) => {
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch (e) {
        return;
      }
      onEvent(ev);
    };
    events.addEventListener('end', () => {
      if (events) events.close();
      events = null;
      refresh();
    });
  }

  $('cancel').addEventListener('click', async () => {
    const button = $('cancel');
    button.disabled = true;
    button.textContent = 'Cancelling…';
    try {
      await fetch(api + '/cancel', { method: 'POST' });
    } catch (e) {
      button.disabled = false;
    }
  });

  // Runs the API would resume (`POST .../resume`): stopped before completing, not running.
  const RESUMABLE = ['failed', 'cancelled', 'partial', 'stopped', 'error'];

  function showResume(run) {
    $('resume').hidden = run.live || !RESUMABLE.includes(run.status);
  }

  // Resumed, the run is live again: the page starts over from the server's picture of it
  // (the DAG as it is now, then the events after it), as when it was first opened.
  $('resume').addEventListener('click', async () => {
    const button = $('resume');
    button.disabled = true;
    button.textContent = 'Resuming…';
    let resp = null;
    try {
      resp = await fetch(api + '/resume', { method: 'POST' });
    } catch (e) {
      // Shown below as a refusal without a reason.
    }
    if (resp && resp.ok) {
      location.reload();
      return;
    }
    let why = resp ? resp.status + '' : 'no answer';
    try {
      why = (await resp.json()).error || why;
    } catch (e) {
      // The status says enough.
    }
    $('error').textContent = 'cannot resume: ' + why;
    $('error').hidden = false;
    button.disabled = false;
    button.textContent = 'Resume run';
  });

  async function start() {
    wireNodes();
    let run;
    try {
      run = await getJson(api);
    } catch (e) {
      $('error').textContent = 'cannot load the run: ' + e.message;
      $('error').hidden = false;
      return;
    }
    live = run.live;
    showTotals(run);
    $('cancel').hidden = !run.live;
    showResume(run);
    if (run.live) {
      subscribe(Number(document.body.dataset.after) || 0);
      const tick = async () => {
        await refresh();
        if (live) setTimeout(tick, 1000);
      };
      setTimeout(tick, 1000);
    } else {
      showReport();
    }
    if (run.kind === 'research') loadRounds();
    document.body.dataset.ready = '1';
  }
  start();
})();
