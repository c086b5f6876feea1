// cog Studio: draws cog's wire events (the lines `cog edit --json` writes) as a list of steps.
// Plain JavaScript, no build step, no network but this server. Every piece of text that comes
// from a file, a model or a tool goes into the page with text nodes, never as HTML, its control characters
// drawn as escapes (visible(), below).
'use strict';
(() => {
  const query = new URLSearchParams(location.search);
  const TOKEN = query.get('token') || sessionStorage.getItem('cog-token') || '';
  if (query.get('token')) sessionStorage.setItem('cog-token', TOKEN);
  const app = document.getElementById('app');
  const conn = document.getElementById('conn');

  const withToken = (path) => path + '?token=' + encodeURIComponent(TOKEN);
  document.getElementById('home').href = withToken('/');

  // --- DOM helpers: strings become text nodes, never markup -----------------------------------
  // Every control character is drawn as its escape (\x1b, \u202e): a bidi override in a file name
  // or a model's reply must not reorder what the page shows. The same characters as cog's
  // visible() (cogcli/shown/visible.py); tests/security/test_shown_text.py holds the two equal.
  // visible:begin
  const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;
  function visible(text) {
    return String(text).replace(CONTROL, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x100 ? '\\x' + code.toString(16).padStart(2, '0') : '\\u' + code.toString(16).padStart(4, '0');
    });
  }
  // visible:end
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : visible(value));
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(visible(child)));
    }
    return node;
  }
  // text set on a node that is already drawn: the same escapes
  function setText(node, text) { node.textContent = visible(text); }
  function clear(node) { while (node.firstChild) node.firstChild.remove(); return node; }

  // Icons (Lucide names, as presentations use them), drawn here as small stroked shapes.
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const DOC = 'M6 3h8l4 4v14H6z M14 3v4h4';
  const ICONS = {
    'file': [DOC, 'M9 12h6 M9 16h6'],
    'file-text': [DOC, 'M9 12h6 M9 16h6'],
    'file-pen': [DOC, 'M9 17l5-5 1.5 1.5-5 5H9z'],
    'file-plus': [DOC, 'M12 11v7 M8.5 14.5h7'],
    'folder': ['M3 6.5h6l2 2h10v11H3z'],
    'search': ['M10.5 4.5a6 6 0 1 0 0 12a6 6 0 1 0 0-12z M15 15l5.5 5.5'],
    'flask-conical': ['M9 3h6 M10 3v6.5L4.5 19.5h15L14 9.5V3 M7.2 15h9.6'],
    'git-compare': ['M6 3.5a2.5 2.5 0 1 0 0 5a2.5 2.5 0 1 0 0-5z M18 15.5a2.5 2.5 0 1 0 0 5a2.5 2.5 0 1 0 0-5z M6 8.5V18h7 M18 15.5V6h-7'],
    'plug': ['M9 3v5 M15 3v5 M6.5 8h11v3.5a5.5 5.5 0 0 1-11 0z M12 17v4'],
    'globe': ['M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18z M3 12h18 M12 3c3 3.2 3 14.8 0 18 M12 3c-3 3.2-3 14.8 0 18'],
    'tool': ['M4 5h16v14H4z M7.5 9.5l3 2.5-3 2.5 M12.5 15h4'],
  };
  function icon(name) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('fill', 'none');
    svg.setAttribute('stroke', 'currentColor');
    svg.setAttribute('stroke-width', '1.8');
    svg.setAttribute('stroke-linecap', 'round');
    svg.setAttribute('stroke-linejoin', 'round');
    svg.setAttribute('aria-hidden', 'true');
    for (const d of ICONS[name] || ICONS.tool) {
      const path = document.createElementNS(SVG_NS, 'path');
      path.setAttribute('d', d);
      svg.append(path);
    }
    return svg;
  }

  // --- the API --------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message, code) { super(message); this.status = status; this.code = code; }
  }
  async function api(path, options = {}) {
    const headers = { Authorization: 'Bearer ' + TOKEN, ...(options.headers || {}) };
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(path, { ...options, headers, cache: 'no-store' });
    let body = null;
    try { body = await response.json(); } catch (_) { /* no JSON body */ }
    if (!response.ok) throw new ApiError(response.status, (body && body.error) || response.statusText, body && body.code);
    return body;
  }
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Server-sent events over fetch (EventSource cannot send the Authorization header). Parsed as
  // the SSE spec says; on a dropped connection it reconnects with Last-Event-ID and misses nothing.
  async function streamEvents(url, onEvent, onState) {
    let last = null;
    let delay = 400;
    for (;;) {
      try {
        const headers = { Authorization: 'Bearer ' + TOKEN, Accept: 'text/event-stream' };
        if (last !== null) headers['Last-Event-ID'] = last;
        const response = await fetch(url, { headers, cache: 'no-store' });
        if (!response.ok) {
          let body = null;
          try { body = await response.json(); } catch (_) { /* none */ }
          throw new ApiError(response.status, (body && body.error) || response.statusText, body && body.code);
        }
        onState('live');
        delay = 400;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        let data = [];
        let id = null;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          const lines = buffer.split('\n');
          buffer = lines.pop();
          for (let line of lines) {
            if (line.endsWith('\r')) line = line.slice(0, -1);
            if (line === '') {
              if (id !== null) { last = id; id = null; }
              if (data.length) {
                const text = data.join('\n');
                data = [];
                if (text === '[DONE]') { onState('done'); return; }
                try { onEvent(JSON.parse(text)); } catch (err) { console.warn('skipped an event', err); }
              }
              continue;
            }
            if (line.startsWith(':')) continue; // a comment: keep-alive
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let val = colon < 0 ? '' : line.slice(colon + 1);
            if (val.startsWith(' ')) val = val.slice(1);
            if (field === 'data') data.push(val);
            else if (field === 'id') id = val;
          }
        }
      } catch (err) {
        if (err instanceof ApiError && err.status < 500) { onState('error', err); return; }
      }
      onState('reconnecting');
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }

  // --- reading details --------------------------------------------------------------------------
  const isInt = (v) => typeof v === 'number' && Number.isFinite(v);
  function diffOf(details) {
    if (details && typeof details === 'object' && typeof details.diff === 'string' && details.diff.trim()) return details.diff;
    if (typeof details === 'string' && (details.startsWith('--- ') || details.startsWith('diff --git'))) return details;
    return null;
  }
  function reportOf(details) {
    if (!details || typeof details !== 'object' || Array.isArray(details)) return null;
    let counts = details;
    if (details.summary && typeof details.summary === 'object') counts = details.summary;
    if (details.counts && typeof details.counts === 'object') counts = details.counts;
    if (!isInt(counts.passed) || !isInt(counts.failed)) return null;
    let failures = details.failures;
    if (!Array.isArray(failures)) failures = (details.tests || []).filter((t) => t && (t.outcome === 'failed' || t.outcome === 'error'));
    return { counts, failures, details };
  }
  function asText(value) {
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') return value;
    try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
  }
  function firstLine(text, limit = 200) {
    for (const line of String(text).split('\n')) {
      const t = line.trim();
      if (t) return t.length > limit ? t.slice(0, limit - 1) + '…' : t;
    }
    return '';
  }
  function ms(value) {
    if (!isInt(value)) return '';
    return value < 1000 ? Math.round(value) + ' ms' : (value / 1000).toFixed(value < 10000 ? 2 : 1) + ' s';
  }
  function when(iso) {
    const t = Date.parse(iso);
    if (!t) return '';
    const s = (Date.now() - t) / 1000;
    if (s < 60) return 'just now';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return new Date(t).toLocaleString();
  }
  function shortArgs(args) {
    if (args === null || args === undefined) return '';
    if (typeof args !== 'object') return firstLine(String(args), 120);
    const parts = [];
    for (const [k, v] of Object.entries(args)) {
      const shown = typeof v === 'string' ? firstLine(v, 60) : firstLine(JSON.stringify(v), 60);
      parts.push(k + '=' + shown);
      if (parts.length === 3) break;
    }
    return parts.join(' ');
  }

  // --- blocks: a diff, a test report, JSON ------------------------------------------------------
  function diffBlock(text) {
    const table = el('table');
    let oldNo = 0;
    let newNo = 0;
    const rows = [];
    for (const line of text.replace(/\n$/, '').split('\n')) {
      const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      if (hunk) {
        oldNo = +hunk[1]; newNo = +hunk[2];
        rows.push(el('tr', { class: 'hunk' }, el('td', { class: 'n' }, '⋯'), el('td', { class: 'n' }, '⋯'), el('td', { class: 's' }), el('td', {}, line)));
      } else if (line.startsWith('diff --git') || line.startsWith('index ')) {
        continue;
      } else if (line.startsWith('--- ')) {
        continue;
      } else if (line.startsWith('+++ ')) {
        const name = line.slice(4).replace(/^b\//, '');
        rows.push(el('tr', { class: 'file' }, el('td', { colspan: 4 }, name)));
      } else if (line.startsWith('+')) {
        rows.push(el('tr', { class: 'add' }, el('td', { class: 'n' }), el('td', { class: 'n' }, newNo++), el('td', { class: 's' }, '+'), el('td', {}, line.slice(1))));
      } else if (line.startsWith('-')) {
        rows.push(el('tr', { class: 'del' }, el('td', { class: 'n' }, oldNo++), el('td', { class: 'n' }), el('td', { class: 's' }, '−'), el('td', {}, line.slice(1))));
      } else if (line.startsWith('\\')) {
        rows.push(el('tr', { class: 'ctx' }, el('td', { class: 'n' }), el('td', { class: 'n' }), el('td', { class: 's' }), el('td', { class: 'muted' }, line)));
      } else {
        rows.push(el('tr', { class: 'ctx' }, el('td', { class: 'n' }, oldNo++), el('td', { class: 'n' }, newNo++), el('td', { class: 's' }), el('td', {}, line.slice(1))));
      }
    }
    append(table, rows);
    return el('div', { class: 'diff', 'data-block': 'diff' }, table);
  }

  function testWords(counts, outcome) {
    const words = ['failed', 'errors', 'passed'].filter((k) => isInt(counts[k]) && (counts[k] > 0 || k === 'passed')).map((k) => counts[k] + ' ' + k);
    return (words.join(', ') || 'tests') + (outcome && outcome !== 'failed' && outcome !== 'passed' ? ' (' + outcome + ')' : '');
  }
  const COUNT_ORDER = ['failed', 'errors', 'passed', 'skipped', 'xfailed', 'xpassed'];
  function countChips(counts, total) {
    const chips = [];
    for (const key of COUNT_ORDER) {
      const n = counts[key];
      if (isInt(n) && (n > 0 || key === 'passed' || key === 'failed')) chips.push(el('span', { class: 'count-chip' + (n > 0 ? ' ' + key : '') }, n + ' ' + key));
    }
    if (isInt(total)) chips.push(el('span', { class: 'count-chip' }, total + ' collected'));
    return el('div', { class: 'counts' }, chips);
  }
  function testBlock(report) {
    const { counts, failures, details } = report;
    const block = el('div', { class: 'tests', 'data-block': 'tests' }, countChips(counts, details.collected));
    for (const f of failures) {
      const name = typeof f === 'string' ? f : f.id || f.nodeid || f.name || f.test || '?';
      const message = typeof f === 'object' ? f.message || '' : '';
      const long = typeof f === 'object' ? f.longrepr || f.message || f.error || '' : '';
      append(block, [el('details', { class: 'failure' }, el('summary', {}, name, el('span', { class: 'msg' }, firstLine(message, 140))), long ? el('pre', {}, asText(long)) : null)]);
    }
    // the details keep the first failures; failures_total counts them all
    const notListed = isInt(details.failures_total) ? details.failures_total - failures.length : 0;
    if (notListed > 0) {
      const where = typeof details.report_file === 'string' ? ' (all of them: ' + details.report_file + ')' : '';
      append(block, [el('div', { class: 'more-failures muted' }, '… and ' + notListed + ' more' + where)]);
    }
    if (details.output_tail) append(block, [el('details', {}, el('summary', {}, 'Output'), el('pre', {}, details.output_tail))]);
    if (details.command) append(block, [el('div', { class: 'command' }, '$ ' + details.command)]);
    return block;
  }
  function previewBlock(preview, args) {
    if (preview && typeof preview === 'object') {
      const diff = diffOf(preview);
      if (diff) {
        const stat = isInt(preview.added) && isInt(preview.removed)
          ? el('div', { class: 'preview-stat' }, el('span', { class: 'plus' }, '+' + preview.added), ' ', el('span', { class: 'minus' }, '−' + preview.removed))
          : null;
        return el('div', { class: 'preview', 'data-block': 'preview' }, stat, diffBlock(diff));
      }
      if (typeof preview.command === 'string') return el('div', { class: 'preview', 'data-block': 'preview' }, el('div', { class: 'command' }, '$ ' + preview.command));
    }
    if (args === undefined || args === null) return null;
    return el('div', { class: 'preview', 'data-block': 'preview' }, jsonBlock(args, 'Arguments'));
  }
  function jsonBlock(details, title = 'Details') {
    return el('details', { class: 'json', 'data-block': 'json' }, el('summary', {}, title), el('pre', {}, asText(details)));
  }
  // a file change's diagnostics (details.diagnostics): what the change introduced, as the terminal says it
  function diagnosticsBlock(details) {
    const d = details && typeof details === 'object' ? details.diagnostics : null;
    if (!d || typeof d !== 'object' || !Array.isArray(d.new)) return null;
    const fixed = Array.isArray(d.fixed) ? d.fixed.length : 0;
    if (!d.new.length && !fixed) return null;
    const errors = d.new.filter((p) => p && (p.severity || 'error') === 'error').length;
    const others = d.new.length - errors;
    const words = [errors ? errors + ' new error' + (errors === 1 ? '' : 's') : null, others ? others + ' new warning' + (others === 1 ? '' : 's') : null,
      fixed ? fixed + ' fixed' : null].filter(Boolean).join(', ');
    const block = el('div', { class: 'diagnostics', 'data-block': 'diagnostics' }, el('div', { class: 'diagnostics-head' + (errors ? ' bad' : '') }, words));
    for (const p of d.new.slice(0, 50)) append(block, [el('div', { class: 'diagnostic' }, p.file + ':' + p.line + ': ' + p.rule + ': ' + p.message)]);
    if (d.new.length > 50) append(block, [el('div', { class: 'muted' }, '… and ' + (d.new.length - 50) + ' more')]);
    return block;
  }
  function detailsBlock(details) {
    if (details === null || details === undefined) return null;
    const diff = diffOf(details);
    const found = diagnosticsBlock(details);
    if (diff && found) return el('div', { class: 'change' }, diffBlock(diff), found);
    if (diff) return diffBlock(diff);
    const report = reportOf(details);
    if (report) return testBlock(report);
    // a background command's output (command_output, its start, kill_command): its last lines, as the running row showed them
    if (typeof details.job === 'string' && typeof details.output === 'string' && details.output.trim()) {
      return el('div', {}, el('pre', { class: 'terminal', 'data-block': 'terminal' }, details.output.replace(/\n+$/, '').split('\n').slice(-20).join('\n')), jsonBlock(details));
    }
    return jsonBlock(details);
  }

  // --- a run, drawn: text blocks and call rows, redrawn at most once per animation frame ------
  class TextItem {
    constructor(view) {
      this.parts = [];
      this.open = true;
      this.node = el('div', { class: 'text streaming' });
      view.list.append(this.node);
    }
    render() {
      if (this.parts.length > 1) this.parts = [this.parts.join('')];
      setText(this.node, this.parts[0] || '');
      this.node.classList.toggle('streaming', this.open);
    }
  }

  // A block of the model's reasoning: dimmed, open while it streams ("Thinking…"), collapsed once it
  // ends to one line ("Thought for 4 s") that opens it again; a stored thread draws it collapsed.
  function thoughtFor(ms) {
    if (!isInt(ms)) return 'Thought';
    const s = Math.round(ms / 1000);
    if (s < 1) return 'Thought for less than a second';
    return 'Thought for ' + (s < 60 ? s + ' s' : Math.floor(s / 60) + ' min ' + (s % 60) + ' s');
  }
  class ReasoningItem {
    constructor(view, startedAt) {
      this.parts = [];
      this.open = true;
      this.durationMs = null;
      this.startedAt = startedAt; // the start event's time, for a stream whose end says no durationMs
      this.drawnOpen = null;
      this.summary = el('summary', {});
      this.body = el('div', { class: 'thought' });
      this.node = el('details', { class: 'reasoning streaming', 'data-block': 'reasoning', open: true }, this.summary, this.body);
      view.list.append(this.node);
    }
    end(ev) {
      this.open = false;
      const at = Date.parse(ev.timestamp);
      this.durationMs = isInt(ev.durationMs) ? ev.durationMs : at && this.startedAt ? at - this.startedAt : null;
    }
    render() {
      if (this.parts.length > 1) this.parts = [this.parts.join('')];
      const text = this.parts[0] || '';
      // an encrypted block (Anthropic's redacted_thinking) streams no text: it says so
      setText(this.body, text || (this.open ? '' : 'The provider sent this reasoning encrypted: there is nothing to show.'));
      setText(this.summary, this.open ? 'Thinking…' : thoughtFor(this.durationMs) + (text ? '' : ' · encrypted'));
      this.node.classList.toggle('streaming', this.open);
      this.node.classList.toggle('encrypted', !this.open && !text);
      this.node.dataset.state = this.open ? 'streaming' : 'done';
      if (this.node.dataset.durationMs === undefined && isInt(this.durationMs)) this.node.dataset.durationMs = String(this.durationMs);
      if (this.drawnOpen !== this.open) { this.node.open = this.open; this.drawnOpen = this.open; } // then the person's to toggle
    }
  }

  class CallItem {
    constructor(view, id, toolName) {
      this.view = view;
      this.id = id;
      this.toolName = toolName || 'tool';
      this.presentation = null;
      this.arguments = undefined;
      this.argsChars = 0;
      this.update = null;
      this.updates = 0;
      this.updatePresentation = null;
      this.result = null;
      this.approval = null;
      this.ended = false;
      this.stoppedRunning = false;
      this.els = {
        icon: el('span', { class: 'icon' }),
        label: el('span', { class: 'label' }),
        detail: el('span', { class: 'detail' }),
        state: el('span', { class: 'state' }),
        took: el('span', { class: 'took' }),
        body: el('div', { class: 'body' }),
      };
      const e = this.els;
      this.node = el('section', { class: 'call', 'data-call-id': id },
        el('div', { class: 'row' }, e.icon, e.label, e.detail, e.took, e.state), e.body);
      this.drawnIcon = null;
      this.drawnResult = false;
      view.list.append(this.node);
    }
    render() {
      const e = this.els;
      // the call's own presentation; an update's lends a running row its label and icon, never its
      // detail (a test run's update names the test that just ended: that goes in the progress line)
      const own = (this.result && this.result.presentation) || this.presentation;
      const p = own || this.updatePresentation;
      const iconName = (own && own.icon) || (this.updatePresentation && this.updatePresentation.icon) || 'tool';
      if (this.drawnIcon !== iconName) { clear(e.icon).append(icon(iconName)); this.drawnIcon = iconName; }
      setText(e.label, p && p.label ? p.label : this.toolName);
      const detail = own ? own.detail || '' : shortArgs(this.arguments);
      setText(e.detail, detail);
      e.detail.title = visible(detail);
      this.node.classList.toggle('waiting', !!(this.approval && this.approval.state === 'pending' && !this.result));
      if (this.result) this.renderResult();
      else this.renderRunning();
    }
    renderRunning() {
      const e = this.els;
      if (!e.state.firstChild || !e.state.firstChild.classList || !e.state.firstChild.classList.contains('spinner')) {
        clear(e.state).append(el('span', { class: 'spinner', title: 'running' }));
        e.state.className = 'state';
      }
      const waiting = this.approval && this.approval.state === 'pending';
      if (this.stoppedRunning || waiting) clear(e.state);
      setText(e.took, waiting ? 'waiting for you' : '');
      clear(e.body);
      if (this.approval) e.body.append(this.approvalCard());
      if (this.update) e.body.append(this.progress());
      if (this.steps) e.body.append(this.stepList());
    }
    stepList() {
      const marks = { running: '…', done: '✓', failed: '✗' };
      return el('ul', { class: 'subagent-steps', 'data-block': 'subagent-steps' },
        ...[...this.steps.values()].map((s) => el('li', { class: s.status }, (marks[s.status] || '·') + ' ' + s.title)));
    }
    progress() {
      const u = this.update;
      const d = u.details;
      const box = el('div', { class: 'progress', 'data-block': 'progress' });
      const line = u.content !== undefined && u.content !== null ? firstLine(asText(u.content), 300) : (u.presentation && u.presentation.detail) || '';
      if (line) box.append(el('div', { class: 'line' }, line));
      if (d && typeof d === 'object' && isInt(d.total_so_far) && isInt(d.collected) && d.collected > 0) {
        const fill = el('div');
        fill.style.width = Math.min(100, (100 * d.total_so_far) / d.collected).toFixed(1) + '%';
        box.append(el('div', { class: 'bar' + (d.failed || d.errors ? ' bad' : ''), role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': d.collected, 'aria-valuenow': d.total_so_far }, fill));
        const bits = [d.total_so_far + ' / ' + d.collected + ' tests'];
        if (d.failed) bits.push(d.failed + ' failed');
        if (d.errors) bits.push(d.errors + ' errors');
        if (isInt(d.passed)) bits.push(d.passed + ' passed');
        box.append(el('div', { class: 'count' }, bits.join(' · ')));
      } else if (this.output) {
        // a running command: its last lines, as a terminal shows them (text only, never markup)
        const term = el('pre', { class: 'terminal', 'data-block': 'terminal' }, this.output.join('\n'));
        box.replaceChildren(term);
        requestAnimationFrame(() => { term.scrollTop = term.scrollHeight; });
      } else if (d && typeof d === 'object' && isInt(d.line)) {
        box.append(el('div', { class: 'count' }, d.line + ' lines of output'));
      }
      return box;
    }
    approvalCard() {
      const a = this.approval;
      const effects = (a.sideEffects || []).join(', ');
      const pending = a.state === 'pending';
      const card = el('div', { class: 'approval' + (pending ? '' : ' decided'), 'data-block': 'approval' },
        el('div', { class: 'what' }, el(pending ? 'div' : 'span', {}, a.description || this.toolName), effects ? el(pending ? 'div' : 'span', { class: 'effects' }, effects) : null,
          a.error ? el('div', { class: 'error' }, a.error) : null));
      // what the call would do, before it is asked: the same diff block as a finished edit, the
      // command of a test run, else (a tool with no preview) its arguments
      if (pending) append(card, [previewBlock(a.preview, a.arguments)]);
      if (a.state === 'pending' && this.view.live) {
        const approve = el('button', { class: 'btn approve', type: 'button', onclick: () => this.decide(true) }, 'Approve');
        const deny = el('button', { class: 'btn deny', type: 'button', onclick: () => this.decide(false) }, 'Deny');
        if (a.sending) { approve.disabled = true; deny.disabled = true; }
        append(card, [el('div', { class: 'actions' }, approve, deny)]);
      } else if (a.state !== 'pending') {
        card.append(el('span', { class: 'badge ' + (a.state === 'approved' ? 'completed' : 'denied') }, a.state === 'approved' ? 'Approved' : 'Denied'));
      }
      return card;
    }
    async decide(approved) {
      const a = this.approval;
      a.sending = true;
      a.error = null;
      this.view.mark(this);
      try {
        await api('/api/runs/' + encodeURIComponent(this.view.runId) + '/approvals', {
          method: 'POST', body: JSON.stringify({ toolCallId: this.id, approved, ...(this.view.attempt ? { attempt: this.view.attempt } : {}) }),
        });
        a.state = approved ? 'approved' : 'denied';
      } catch (err) {
        a.error = err.message;
      }
      a.sending = false;
      this.view.mark(this);
    }
    renderResult() {
      if (this.drawnResult) return;
      this.drawnResult = true;
      const r = this.result;
      const e = this.els;
      const failed = (r.error !== undefined && r.error !== null) || (typeof r.errorCode === 'string' && r.errorCode !== '');
      // a call that ran but whose tests did not pass is no green tick either: a red cross and its counts
      const report = failed ? null : reportOf(r.details);
      const outcome = r.details && typeof r.details === 'object' && typeof r.details.outcome === 'string' ? r.details.outcome : null;
      const testsFailed = !!report && ((isInt(report.counts.failed) && report.counts.failed > 0) || (isInt(report.counts.errors) && report.counts.errors > 0) || (outcome !== null && outcome !== 'passed'));
      const bad = failed || testsFailed;
      clear(e.state).append(bad ? '✕' : '✓');
      e.state.className = 'state ' + (bad ? 'bad' : 'ok');
      e.state.title = failed ? 'failed' : testsFailed ? testWords(report.counts, outcome) : 'done';
      setText(e.took, ms(r.durationMs));
      this.node.dataset.status = failed ? 'error' : testsFailed ? 'tests-failed' : 'ok';
      clear(e.body);
      if (this.approval && this.approval.state !== 'pending') e.body.append(this.approvalCard());
      if (this.steps) e.body.append(this.stepList());
      if (failed) {
        e.body.append(el('div', { class: 'error', 'data-block': 'error' }, r.error, r.errorCode ? el('span', { class: 'code' }, r.errorCode) : null));
      } else if (r.result !== undefined && r.result !== null && r.result !== '') {
        const text = asText(r.result);
        const gist = typeof r.result === 'string' ? firstLine(text, 120) : firstLine(JSON.stringify(r.result), 120);
        e.body.append(el('details', { class: 'result', 'data-block': 'result' }, el('summary', {}, 'Result · ', gist), el('pre', {}, text)));
      }
      const block = detailsBlock(r.details);
      if (block) e.body.append(block);
    }
  }

  class RunView {
    constructor(container, { live, runId }) {
      this.live = live;
      this.runId = runId;
      this.calls = new Map();
      this.texts = new Map();
      this.thoughts = new Map();
      this.dirty = new Set();
      this.scheduled = false;
      this.count = 0;
      this.finish = null;
      this.onFinish = null;
      this.list = el('div', { class: 'steps', id: 'steps' });
      container.append(this.list);
    }
    mark(item) {
      this.dirty.add(item);
      if (!this.scheduled) {
        this.scheduled = true;
        requestAnimationFrame(() => this.flush());
      }
    }
    flush() {
      this.scheduled = false;
      if (this.drawing) return;  // a long thread's rows are being drawn a slice a frame (drawSlices)
      const stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
      const items = [...this.dirty];
      this.dirty.clear();
      for (const item of items) item.render();
      if (stick && this.live) window.scrollTo(0, document.body.scrollHeight);
    }
    thought(ev) {
      let r = this.thoughts.get(ev.id);
      if (!r) { r = new ReasoningItem(this, Date.parse(ev.timestamp) || null); this.thoughts.set(ev.id, r); }
      this.mark(r);
      return r;
    }
    call(id, toolName) {
      let item = this.calls.get(id);
      if (!item) { item = new CallItem(this, id, toolName); this.calls.set(id, item); }
      return item;
    }
    handle(ev) {
      this.count++;
      switch (ev.type) {
        case 'text-start': { const t = new TextItem(this); this.texts.set(ev.id, t); this.mark(t); break; }
        case 'text-delta': {
          let t = this.texts.get(ev.id);
          if (!t) { t = new TextItem(this); this.texts.set(ev.id, t); }
          t.parts.push(ev.delta || '');
          this.mark(t);
          break;
        }
        case 'text-end': { const t = this.texts.get(ev.id); if (t) { t.open = false; this.mark(t); } break; }
        case 'reasoning-start': this.thought(ev); break;
        case 'reasoning-delta': this.thought(ev).parts.push(ev.delta || ''); break;
        case 'reasoning-end': this.thought(ev).end(ev); break;
        case 'tool-call-start': { const c = this.call(ev.id, ev.toolName); if (ev.presentation) c.presentation = ev.presentation; this.mark(c); break; }
        case 'tool-call-delta': { const c = this.call(ev.id); c.argsChars += (ev.argsTextDelta || '').length; break; }
        case 'tool-call-end': { const c = this.call(ev.id, ev.toolName); c.toolName = ev.toolName || c.toolName; c.arguments = ev.arguments; if (ev.presentation) c.presentation = ev.presentation; this.mark(c); break; }
        case 'approval-required':
          for (const a of ev.approvals || []) {
            const c = this.call(a.toolCallId, a.toolName);
            if (ev.subagent) { c.subagentOf = ev.subagent.toolCallId; c.node.classList.add('subagent'); }  // a child's question, under its task
            c.approval = { description: a.description, sideEffects: a.sideEffects, preview: a.preview, arguments: a.arguments, state: 'pending' };
            if (!c.presentation && a.description && a.description !== a.toolName) {
              // the description is the call's presentation, "label · detail": the row says it too
              const cut = a.description.indexOf(' · ');
              c.presentation = cut < 0 ? { label: a.description } : { label: a.description.slice(0, cut), detail: a.description.slice(cut + 3) };
              // the result's presentation (with its icon) replaces it
            }
            this.mark(c);
          }
          break;
        case 'tool-update': {
          const c = this.call(ev.toolCallId, ev.toolName);
          if (ev.arguments !== undefined) c.arguments = ev.arguments;
          if (ev.content !== undefined || ev.details !== undefined) { c.update = ev; c.updates++; }
          if (ev.details && isInt(ev.details.lines) && isInt(ev.details.line) && typeof ev.content === 'string') {
            // a command's output lines: kept (the last 200) for the terminal block under the row
            c.output = (c.output || []).concat(ev.content.split('\n')).slice(-200);
          }
          if (ev.presentation) c.updatePresentation = ev.presentation;
          if (ev.details && typeof ev.details.subagent === 'string' && typeof ev.details.call_id === 'string') {
            // a task's subagent: its calls so far, nested under the task's row (docs/subagents.md)
            c.steps = c.steps || new Map();
            c.steps.set(ev.details.call_id, { title: String(ev.details.title || ev.details.tool_name || ''), status: String(ev.details.status || '') });
            const asked = this.calls.get(ev.details.call_id);  // the child's call it asked you about has ended
            if (asked && asked.subagentOf === c.id && ev.details.status !== 'running') {
              if (asked.approval && asked.approval.state === 'pending') asked.approval.state = 'answered';
              asked.stoppedRunning = true;
              this.mark(asked);
            }
          }
          this.mark(c);
          break;
        }
        case 'tool-result': {
          const c = this.call(ev.toolCallId || ev.id, ev.toolName);
          c.result = ev;
          if (c.approval && c.approval.state === 'pending') c.approval.state = ev.errorCode === 'DENIED' ? 'denied' : 'approved';
          this.mark(c);
          break;
        }
        case 'error': {
          this.list.append(el('div', { class: 'error run-error', 'data-block': 'run-error' }, ev.message, ev.code ? el('span', { class: 'code' }, ev.code) : null));
          break;
        }
        case 'hook': this.drawHook(ev); break;
        case 'finish': this.drawFinish(ev); break;
        default: break; // start, and types a newer cog sends
      }
    }
    drawHook(ev) {
      // one quiet line for a hook that blocked, asked, changed a call, failed or said something (as the terminal's)
      const what = ev.hookEventName + ' hook' + (ev.source && ev.source !== 'config.toml' ? ' (' + ev.source + ')' : '') + (ev.toolName ? ' · ' + ev.toolName : '');
      let said = null;
      if (ev.outcome === 'blocked') said = 'blocked: ' + (ev.reason || 'no reason given');
      else if (ev.outcome === 'error') said = 'failed (' + (ev.timedOut ? 'timed out and was killed' : ev.message || 'exit ' + ev.exitCode) + '); the run went on';
      else if (ev.decision === 'ask') said = 'asks the person: ' + (ev.reason || '');
      else if (ev.updatedInput) said = 'changed the arguments';
      else if (ev.message) said = ev.message;
      else if (ev.additionalContext) said = 'added context: ' + ev.additionalContext;
      if (said === null) return;
      this.list.append(el('div', { class: 'hook ' + (ev.outcome || ''), 'data-block': 'hook', title: ev.command }, el('span', { class: 'code' }, what), ' ', said.slice(0, 600)));
    }
    drawFinish(ev) {
      this.finish = ev;
      for (const c of this.calls.values()) if (!c.result) { c.stoppedRunning = true; this.mark(c); }
      for (const t of this.texts.values()) if (t.open) { t.open = false; this.mark(t); }
      for (const r of this.thoughts.values()) if (r.open) { r.end({ timestamp: ev.timestamp }); this.mark(r); }
      const stats = [];
      if (isInt(ev.steps)) stats.push(ev.steps + (ev.steps === 1 ? ' step' : ' steps'));
      if (isInt(ev.durationMs)) stats.push(ms(ev.durationMs));
      if (ev.usage && isInt(ev.usage.totalTokens) && ev.usage.totalTokens > 0) stats.push(ev.usage.totalTokens.toLocaleString() + ' tokens');
      if (ev.usage && (isInt(ev.usage.cachedInputTokens) || isInt(ev.usage.cacheWriteTokens) || typeof ev.usage.costUsd === 'number')) {
        // the prompt cache and the cost, as the terminal's last line says them (absent: not reported; no price: unknown)
        const u = ev.usage, n = (v) => (isInt(v) ? v.toLocaleString() : '–'), cost = u.costUsd;
        stats.push(n(u.inputTokens) + ' in (' + n(u.cachedInputTokens) + ' cache read, ' + n(u.cacheWriteTokens) + ' cache write) · ' +
          n(u.outputTokens) + ' out' + (isInt(u.reasoningTokens) && u.reasoningTokens > 0 ? ' (' + n(u.reasoningTokens) + ' reasoning)' : '') + ' · ' + (typeof cost === 'number' && isFinite(cost) ? '$' + cost.toFixed(cost < 0.01 ? 4 : 3) : 'cost unknown'));
      }
      if (ev.tests) stats.push(['failed', 'passed'].filter((k) => isInt(ev.tests[k])).map((k) => ev.tests[k] + ' ' + k).join(', '));
      const files = (ev.filesChanged || []).map((f) => el('span', { class: 'file-chip' }, f.path + ' ', el('span', { class: 'plus' }, '+' + f.added), ' ', el('span', { class: 'minus' }, '−' + f.removed)));
      // a run that completed with failing (or unfinished) tests did not end well: it says so next to its status
      const t = ev.tests || {};
      const testsBad = (isInt(t.failed) && t.failed > 0) || (isInt(t.errors) && t.errors > 0) || (typeof ev.testsError === 'string' && ev.testsError !== '');
      this.list.append(el('div', { class: 'panel finish', 'data-block': 'finish', 'data-status': ev.status },
        el('span', { class: 'badge ' + ev.status }, ev.status),
        testsBad ? el('span', { class: 'badge tests-failed', 'data-outcome': 'tests-failed' }, ev.testsError ? 'tests did not finish' : 'tests failed') : null,
        stats.map((s) => el('span', { class: 'stat' }, s)),
        files.length ? el('span', { class: 'files' }, files) : null));
      if (this.onFinish) this.onFinish(ev);
    }
  }

  // --- pages ------------------------------------------------------------------------------------
  function setConn(state) {
    conn.hidden = false;
    conn.className = 'conn ' + state;
    setText(conn, { live: 'live', reconnecting: 'reconnecting…', done: 'finished', error: 'disconnected' }[state] || state);
  }
  function fatal(err) {
    clear(app);
    const unauthorized = err instanceof ApiError && err.status === 401;
    app.append(el('p', { class: 'notice bad' }, unauthorized
      ? 'This page needs the token: open the URL that cog serve printed (http://127.0.0.1:…/?token=…).'
      : 'Error: ' + err.message));
  }
  async function loadWorkspace() {
    try {
      const ws = await api('/api/workspace');
      setText(document.getElementById('workspace'), ws.name);
      document.title = visible(ws.name) + ' · cog Studio';
      return ws;
    } catch (err) { fatal(err); throw err; }
  }

  function newRunForm(ws, thread) {
    const input = el('textarea', { name: 'input', placeholder: thread ? 'Continue this thread: what next?' : 'What should cog do? e.g. Fix the failing test', required: true });
    const model = el('input', { name: 'model', placeholder: ws.model ? 'model (default ' + ws.model + ')' : 'provider:model, e.g. openai:gpt-4o-mini' });
    const approval = el('select', { name: 'approval' },
      el('option', { value: 'ask' }, 'Ask before edits and test runs'),
      el('option', { value: 'auto' }, 'Run without asking'));
    const problem = el('div', { class: 'error', hidden: true });
    const start = el('button', { class: 'btn primary', type: 'submit' }, thread ? 'Continue' : 'Start run');
    const attempts = thread ? null : attemptsField();
    const form = el('form', { class: 'panel newrun', id: 'newrun' }, input, el('div', { class: 'opts' }, model, approval, attempts, start), problem);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (!input.value.trim()) return;
      start.disabled = true;
      problem.hidden = true;
      try {
        const body = { input: input.value, approval: approval.value };
        if (model.value.trim()) body.model = model.value.trim();
        if (thread) body.thread = thread;
        if (attempts) Object.assign(body, attemptsBody(attempts));
        const run = await api('/api/runs', { method: 'POST', body: JSON.stringify(body) });
        location.href = withToken('/runs/' + encodeURIComponent(run.runId));
      } catch (err) {
        setText(problem, err.message);
        problem.hidden = false;
        start.disabled = false;
      }
    });
    input.addEventListener('keydown', (event) => { if (event.key === 'Enter' && (event.metaKey || event.ctrlKey)) form.requestSubmit(); });
    return form;
  }

  function fileChips(files) {
    return el('span', { class: 'files' }, (files || []).slice(0, 4).map((f) =>
      el('span', { class: 'file-chip' }, f.path + ' ', el('span', { class: 'plus' }, '+' + f.added), ' ', el('span', { class: 'minus' }, '−' + f.removed))),
    (files || []).length > 4 ? el('span', { class: 'file-chip' }, '+' + (files.length - 4) + ' more') : null);
  }

  async function indexPage() {
    const ws = await loadWorkspace();
    clear(app);
    app.append(el('h1', {}, ws.name), el('div', { class: 'muted' }, ws.path), el('h2', {}, 'New run'), newRunForm(ws, null));
    const [runs, threads] = await Promise.all([api('/api/runs'), api('/api/threads')]);
    const live = runs.filter((r) => !r.finished);
    if (live.length) {
      app.append(el('h2', {}, 'Running now'), el('ul', { class: 'panel list', id: 'live-runs' }, live.map((r) =>
        el('li', {}, el('span', { class: 'badge running' }, r.pendingApprovals.length ? 'waiting for you' : 'running'),
          r.attempts ? el('span', { class: 'badge' }, 'best of ' + r.attempts) : null,
          el('a', { class: 'title', href: withToken('/runs/' + encodeURIComponent(r.runId)) }, r.input),
          el('span', { class: 'when' }, when(r.startedAt))))));
    }
    app.append(el('h2', {}, 'Threads'));
    if (!threads.length) {
      app.append(el('div', { class: 'panel empty muted' }, 'No threads yet. Start a run above, or run cog edit here.'));
      return;
    }
    app.append(el('ul', { class: 'panel list', id: 'threads' }, threads.map((t) =>
      el('li', { 'data-thread-id': t.id }, el('span', { class: 'badge ' + t.status }, t.status),
        t.undone ? el('span', { class: 'badge undone', title: 'its last run was undone (cog undo)' }, 'undone') : null,
        el('a', { class: 'title', href: withToken('/threads/' + encodeURIComponent(t.id)), title: t.title }, t.title || t.id),
        fileChips(t.filesChanged), el('span', { class: 'when', title: t.updatedAt }, when(t.updatedAt))))));
  }

  // The run's background commands (run_command background=true): listed under its head while any
  // exists, refreshed after each tool result and every few seconds while the run goes on; the
  // run's end kills them (its session closes), which the last refreshes show
  function humanBytes(n) { return n < 1024 ? n + ' B' : n < 1048576 ? Math.round(n / 1024) + ' KB' : (n / 1048576).toFixed(1) + ' MB'; }
  function jobState(job) { return job.running ? (job.keptPid ? 'running, kept' : 'running') : job.killed ? 'killed' : 'exited ' + job.exitCode; }
  function jobsPanel(runId) {
    const node = el('div', { class: 'panel jobs', 'data-block': 'jobs', hidden: true });
    let timer = null;
    let pending = false;
    async function refresh() {
      if (pending) return;
      pending = true;
      let jobs = [];
      try { jobs = await api('/api/runs/' + encodeURIComponent(runId) + '/jobs'); } catch (_) { /* a swept run: keep what is drawn */ return; } finally { pending = false; }
      clear(node).hidden = !jobs.length;
      if (!jobs.length) return;
      const running = jobs.filter((j) => j.running).length;
      node.append(el('div', { class: 'jobs-head' }, 'Background commands · ' + running + ' running'));
      for (const job of jobs) {
        const state = jobState(job);
        node.append(el('div', { class: 'job', 'data-job-id': job.id, 'data-state': job.running ? 'running' : job.killed ? 'killed' : 'exited' },
          el('span', { class: 'badge ' + (job.running ? 'running' : job.killed || job.exitCode ? 'error' : 'completed') }, state),
          el('span', { class: 'job-id' }, job.id), el('code', { class: 'job-command', title: job.command }, job.command),
          el('span', { class: 'when' }, humanBytes(job.bytesTotal) + ' · ' + Math.round(job.ageS) + ' s'),
          job.keptPid ? el('span', { class: 'when job-kept', title: 'cog jobs lists it; cog jobs kill ' + job.keptPid + ' ends it' },
            'kept · pid ' + job.keptPid + ' · log ' + (job.keptLog || '')) : null,
          job.running && !job.keptPid ? keepButton(job) : null));
      }
    }
    // the person's Keep: the command runs on after the run's session (beyond undo), cog jobs lists it
    function keepButton(job) {
      const button = el('button', { class: 'btn', type: 'button', 'data-keep': job.id, title: 'Keep it running after this run ends (cog jobs lists it)' }, 'Keep');
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await api('/api/runs/' + encodeURIComponent(runId) + '/jobs/' + encodeURIComponent(job.id) + '/keep', { method: 'POST' });
          refresh();
        } catch (err) { setText(button, err.message); }
      });
      return button;
    }
    function start() { if (timer === null) timer = setInterval(refresh, 3000); }
    function stop() {  // the session closes after the finish: two last looks show the commands ended
      if (timer !== null) clearInterval(timer);
      timer = null;
      setTimeout(refresh, 500);
      setTimeout(refresh, 2500);
    }
    return { node, refresh, start, stop };
  }

  async function runPage(runId) {
    await loadWorkspace();
    let info;
    try { info = await api('/api/runs/' + encodeURIComponent(runId)); } catch (err) { fatal(err); return; }
    if (info.attempts) { await attemptsPage(runId, info); return; }
    clear(app);
    const badge = el('span', { class: 'badge ' + info.status, id: 'run-status' }, info.status);
    const abort = el('button', { class: 'btn deny', type: 'button', id: 'abort' }, 'Abort');
    const threadLink = el('a', { href: info.threadId ? withToken('/threads/' + encodeURIComponent(info.threadId)) : '#' }, info.threadId || '');
    app.append(el('div', { class: 'runhead' },
      el('div', { class: 'spacer' }, el('h1', {}, info.input), el('div', { class: 'meta' }, badge, info.model ? el('span', {}, info.model) : null, el('span', {}, 'thread ', threadLink))),
      info.finished ? null : abort));
    const jobs = jobsPanel(runId);
    app.append(jobs.node);
    jobs.refresh();
    if (!info.finished) jobs.start();
    const view = new RunView(app, { live: true, runId });
    abort.addEventListener('click', async () => {
      abort.disabled = true;
      try { await api('/api/runs/' + encodeURIComponent(runId) + '/abort', { method: 'POST' }); } catch (err) { setText(abort, err.message); }
    });
    view.onFinish = (ev) => {
      jobs.stop();
      setText(badge, ev.status); badge.className = 'badge ' + ev.status; abort.remove();
      if (info.threadId && (ev.filesChanged || []).length) app.append(undoButton(info.threadId, ev.messageId));
    };
    window.cogView = view;
    await streamEvents('/api/runs/' + encodeURIComponent(runId) + '/events', (ev) => {
      view.handle(ev);
      if (ev.type === 'tool-result') jobs.refresh();
    }, (state, err) => {
      setConn(state);
      if (state === 'error') app.append(el('p', { class: 'notice bad' }, err.message));
    });
  }

  // --- best-of-N: a run of N attempts (POST /api/runs {"attempts": N}, docs/worktrees.md) ----------
  // Each attempt's events come tagged "attempt": K and are drawn in the attempt's own column (its
  // own RunView: rows, approvals naming the attempt, its finish), side by side; the last event,
  // type "attempts", is the comparison table with the winner marked, what was applied, and Undo.
  function attemptsField() {
    return el('input', { name: 'attempts', type: 'number', step: 1, class: 'attempts-input',  // the server checks the range and says it
      placeholder: 'attempts', title: 'Best-of-N: run this many attempts side by side, each in its own git worktree; the tests pick the winner, which is applied (Undo takes it back)' });
  }
  function attemptsBody(field) {
    const raw = field.value.trim();
    if (!raw || raw === '1') return {};
    const n = Number(raw);
    return { attempts: Number.isInteger(n) ? n : raw };  // the server says what is wrong with it
  }
  function attemptTests(row) {
    if (!isInt(row.passed)) return 'not run';
    const bad = (row.failed || 0) + (row.errors || 0);
    return row.passed + ' passed' + (bad ? ', ' + bad + ' failed' : '');
  }
  function attemptsTable(line) {
    const head = el('tr', {}, ['', 'attempt', 'status', 'tests', 'files', 'lines', 'tokens', 'cost', 'branch'].map((h) => el('th', {}, h)));
    const rows = (line.attempts || []).map((r) => {
      const won = r.attempt === line.winner;
      return el('tr', { class: won ? 'winner' : '', 'data-attempt': String(r.attempt) },
        el('td', { class: 'mark' }, won ? '★' : ''), el('td', {}, 'attempt ' + r.attempt),
        el('td', {}, el('span', { class: 'badge ' + r.status }, r.status), r.error ? el('div', { class: 'error' }, firstLine(r.error, 160)) : null),
        el('td', { class: 'attempt-tests' + ((r.failed || r.errors) ? ' bad' : ''), title: r.tests_error || '' }, attemptTests(r)),
        el('td', { class: 'n' }, String(r.files)),
        el('td', { class: 'n' }, el('span', { class: 'plus' }, '+' + r.added), ' ', el('span', { class: 'minus' }, '−' + r.removed)),
        el('td', { class: 'n' }, isInt(r.tokens) ? r.tokens.toLocaleString() : ''),
        el('td', { class: 'n' }, typeof r.cost_usd === 'number' ? '$' + r.cost_usd.toFixed(4) : '?'),
        el('td', {}, el('code', {}, r.branch)));
    });
    return el('table', { class: 'attempts-table' }, el('thead', {}, head), el('tbody', {}, rows));
  }
  function attemptsOutcome(line) {
    const box = el('div', { class: 'panel attempts-outcome', 'data-block': 'attempts', 'data-winner': line.winner === null ? '' : String(line.winner) },
      el('h2', {}, 'Comparison'), attemptsTable(line));
    if (line.applied) {
      box.append(el('p', { class: 'applied' }, 'Applied attempt ' + line.winner + ' to the work tree: ',
        (line.applied.files || []).map((f) => el('code', { class: 'file-chip' }, f)), ' (not committed; the other attempts stay as branches)'),
      undoButton(line.applied.threadId, line.applied.messageId));
    } else {
      box.append(el('p', { class: 'notice' + (line.error ? ' bad' : '') }, line.said || line.error || 'Nothing was applied.'));
    }
    return box;
  }
  async function attemptsPage(runId, info) {
    clear(app);
    app.classList.add('attempts-page');
    const badge = el('span', { class: 'badge ' + info.status, id: 'run-status' }, info.status);
    const abort = el('button', { class: 'btn deny', type: 'button', id: 'abort' }, 'Abort');
    app.append(el('div', { class: 'runhead' },
      el('div', { class: 'spacer' }, el('h1', {}, info.input), el('div', { class: 'meta' }, badge, el('span', { class: 'badge' }, 'best of ' + info.attempts),
        info.model ? el('span', {}, info.model) : null)), info.finished ? null : abort));
    abort.addEventListener('click', async () => {
      abort.disabled = true;
      try { await api('/api/runs/' + encodeURIComponent(runId) + '/abort', { method: 'POST' }); } catch (err) { setText(abort, err.message); }
    });
    const grid = el('div', { class: 'attempts-grid' });
    app.append(grid);
    const columns = [];
    for (let k = 1; k <= info.attempts; k++) {
      const status = el('span', { class: 'badge running' }, 'running');
      const thread = el('a', { class: 'attempt-thread' });
      const col = el('section', { class: 'panel attempt', 'data-attempt': String(k) }, el('div', { class: 'attempt-head' }, el('strong', {}, 'Attempt ' + k), status, thread));
      grid.append(col);
      const view = new RunView(col, { live: true, runId });
      view.list.removeAttribute('id');
      view.attempt = k;
      view.onFinish = (ev) => { setText(status, ev.status); status.className = 'badge ' + ev.status; };
      columns.push({ col, view, thread });
    }
    window.cogAttempts = columns.map((c) => c.view);
    await streamEvents('/api/runs/' + encodeURIComponent(runId) + '/events', (ev) => {
      const c = isInt(ev.attempt) ? columns[ev.attempt - 1] : null;
      if (c) {
        if (ev.type === 'start' && ev.threadId) { c.thread.href = withToken('/threads/' + encodeURIComponent(ev.threadId)); setText(c.thread, 'thread'); }
        c.view.handle(ev);
      } else if (ev.type === 'attempts') {
        for (const x of columns) x.col.classList.toggle('winner', Number(x.col.dataset.attempt) === ev.winner);
        const status = ev.status || (ev.applied ? 'completed' : 'error');
        setText(badge, status); badge.className = 'badge ' + status; abort.remove();
        app.append(attemptsOutcome(ev));
      } else if (ev.type === 'error') {
        app.append(el('p', { class: 'notice bad' }, ev.message));
      }
    }, (state, err) => {
      setConn(state);
      if (state === 'error') app.append(el('p', { class: 'notice bad' }, err.message));
    });
  }

  // Undo on a finished run: puts back the files it (and every later run not undone) changed. A
  // click first asks for the dry run and shows what would be put back — the tools' writes apart
  // from what the runs' commands changed, as `cog undo --dry-run` lists them — with its notes;
  // Confirm walks it back. Refused, with what differs, when a file changed since.
  function undoButton(threadId, messageId) {
    const url = '/api/threads/' + encodeURIComponent(threadId) + '/undo';
    const to = messageId ? { to: messageId } : {};
    const button = el('button', { class: 'btn deny undo', type: 'button', 'data-message-id': messageId || '',
      title: 'Show what undo puts back: the files this run and any later run changed (a file changed since is refused, never overwritten)' }, 'Undo');
    const problem = el('div', { class: 'error', hidden: true });
    const preview = el('div', { class: 'undo-preview', hidden: true });
    const fail = (err) => { setText(problem, err.message); problem.hidden = false; button.disabled = false; };
    button.addEventListener('click', async () => {
      button.disabled = true;
      problem.hidden = true;
      preview.hidden = true;
      try {
        const plan = await api(url, { method: 'POST', body: JSON.stringify({ ...to, dryRun: true }) });
        showUndoPlan(preview, plan, async (confirm) => {
          confirm.disabled = true;
          try {
            await api(url, { method: 'POST', body: JSON.stringify(to) });
            location.href = withToken('/threads/' + encodeURIComponent(threadId));
          } catch (err) { preview.hidden = true; fail(err); }
        }, () => { preview.hidden = true; button.disabled = false; });
      } catch (err) { fail(err); }
    });
    return el('div', { class: 'undo-row' }, button, problem, preview);
  }

  // the dry run's plan: its runs, the files the tools wrote, the files commands changed, its notes
  function showUndoPlan(box, plan, onConfirm, onCancel) {
    clear(box);
    const named = (f) => el('li', { 'data-path': f.path }, el('code', {}, f.path),
      f.deleted ? el('span', { class: 'badge' }, 'deleted') : f.created ? el('span', { class: 'badge' }, 'restored') : null);
    const group = (kind, title, files) => files.length
      ? el('div', { class: 'undo-files ' + kind }, el('h4', {}, title + ' (' + files.length + ')'), el('ul', {}, files.map(named))) : null;
    const runs = (plan.runs || []).map((r) => 'run ' + r.number + ' (' + r.title + ')').join(', ');
    const files = plan.files || [];
    const folders = plan.folders || [];
    const confirm = el('button', { class: 'btn deny undo-confirm', type: 'button' },
      files.length || !folders.length ? 'Undo ' + files.length + ' file' + (files.length === 1 ? '' : 's') : 'Undo');
    const cancel = el('button', { class: 'btn undo-cancel', type: 'button' }, 'Cancel');
    confirm.addEventListener('click', () => onConfirm(confirm));
    cancel.addEventListener('click', onCancel);
    box.append(el('p', { class: 'undo-runs' }, 'walks back ' + runs),
      group('tools', 'Tool writes', files.filter((f) => !f.byCommand)),
      group('commands', 'Command changes', files.filter((f) => f.byCommand).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))),
      group('folders', 'Folders commands made, removed if empty', folders.map((d) => ({ path: d + '/' }))),
      (plan.notes || []).length ? el('ul', { class: 'undo-notes' }, plan.notes.map((n) => el('li', {}, n))) : null,
      el('div', { class: 'undo-actions' }, confirm, cancel));
    box.hidden = false;
  }

  // A stored thread's events come as SSE, the server sending them a part at a time (issue 53): a
  // short thread is drawn once all of it is in, as it always was; a long one (over LONG_THREAD_ROWS
  // calls) as soon as that many are in, the rest drawn as it comes.
  async function threadPage(threadId) {
    const workspace = loadWorkspace();  // the three requests at once
    workspace.catch(() => {});  // awaited below
    const events = [];
    let calls = 0;
    let ended = null;  // 'done', or the error the stream ended with
    let wake = null;
    const arrived = () => { if (wake) { const w = wake; wake = null; w(); } };
    const next = () => new Promise((resolve) => { wake = resolve; });
    streamEvents('/api/threads/' + encodeURIComponent(threadId) + '/events', (ev) => {
      events.push(ev);
      if (ev.type === 'tool-call-start') calls++;
      arrived();  // the waiter runs once this part is parsed
    }, (state, err) => {
      if (state === 'done') ended = 'done';
      else if (state === 'error') ended = err;
      else return;
      arrived();
    });
    const listed = api('/api/threads');
    listed.catch(() => {});  // awaited below
    const ws = await workspace;
    while (ended === null && calls <= LONG_THREAD_ROWS) await next();
    let threads;
    try {
      if (ended instanceof Error) throw ended;
      threads = await listed;
    } catch (err) { fatal(err); return; }
    const info = threads.find((t) => t.id === threadId) || { title: threadId, status: '' };
    clear(app);
    app.append(el('div', { class: 'runhead' }, el('div', { class: 'spacer' }, el('h1', {}, info.title || threadId),
      el('div', { class: 'meta' }, info.status ? el('span', { class: 'badge ' + info.status }, info.status) : null,
        info.undone ? el('span', { class: 'badge undone' }, 'undone') : null, el('span', {}, threadId),
        info.updatedAt ? el('span', {}, when(info.updatedAt)) : null))));
    const view = new RunView(app, { live: false, runId: null });
    window.cogView = view;
    const undone = new Set(info.undoneRuns || []);
    const long = calls > LONG_THREAD_ROWS;
    const nextChunk = long ? chunkRows(view) : () => {};
    let number = 0;
    let drawn = 0;
    const drawIn = () => {
      for (; drawn < events.length; drawn++) {
        const ev = events[drawn];
        nextChunk();
        if (ev.type === 'start') {
          if (view.count > 0) view.list.append(el('hr', { class: 'runsep' }));
          number += 1;  // the number cog undo --to and chat's /rewind take
          view.list.append(el('div', { class: 'runmark', 'data-run': String(number), 'data-message-id': ev.messageId || '' }, 'run ' + number,
            undone.has(ev.messageId) ? el('span', { class: 'badge undone', title: 'walked back (cog undo)' }, 'undone') : null));
        }
        view.handle(ev);
        if (ev.type === 'finish' && !undone.has(ev.messageId) && (ev.filesChanged || []).length) view.list.append(undoButton(threadId, ev.messageId));
      }
    };
    drawIn();
    if (long) {
      const more = drawSlices(view, () => ended === null);
      while (ended === null) { await next(); drawIn(); more(); }
      if (ended instanceof Error) { fatal(ended); return; }
    } else view.flush();
    app.append(el('h2', {}, 'Continue'), newRunForm(ws, threadId));
  }

  // A long thread (issue 53: 2,000 rows): its rows go in chunks the browser lays out and paints only
  // near the screen (.steps.chunk: content-visibility), and are drawn a slice a frame, top first,
  // so the first screen shows at once and scrolling stays smooth; every row is still in the page.
  const LONG_THREAD_ROWS = 150;
  const CHUNK_ROWS = 40;
  function chunkRows(view) {
    const outer = view.list;
    outer.classList.add('chunked');
    document.body.classList.add('long-thread');
    let chunk = null;
    return () => {  // before each event: a new chunk once this one is full (what the view adds goes to view.list)
      if (chunk && chunk.childElementCount < CHUNK_ROWS) return;
      chunk = el('div', { class: 'steps chunk' });
      outer.append(chunk);
      view.list = chunk;
    };
  }
  // Draws what the view has to draw a slice a frame; the function it returns starts it again when
  // more rows came in; drawing ends (view.drawing false) once none is left and coming() says no more will.
  function drawSlices(view, coming) {
    view.drawing = true;
    let running = false;
    const slice = () => {
      const until = performance.now() + 10;
      let n = 0;
      for (const item of view.dirty) {  // in the order they came: the top of the thread first
        view.dirty.delete(item);
        item.render();
        if (++n >= 10 && performance.now() > until) break;
      }
      if (view.dirty.size) { requestAnimationFrame(slice); return; }
      running = false;
      if (coming()) return;
      view.drawing = false;
      performance.mark('cog-rows-all');
    };
    const more = () => { if (!running) { running = true; slice(); } };
    more();
    return more;
  }

  async function main() {
    if (!TOKEN) { fatal(new ApiError(401, 'no token')); return; }
    const path = location.pathname;
    let m;
    try {
      if ((m = /^\/runs\/([^/]+)$/.exec(path))) await runPage(decodeURIComponent(m[1]));
      else if ((m = /^\/threads\/([^/]+)$/.exec(path))) await threadPage(decodeURIComponent(m[1]));
      else await indexPage();
    } catch (err) {
      if (!(err instanceof ApiError && app.querySelector('.notice'))) fatal(err);
    }
  }
  main();
})();
