// timeline.js defines window.__pc, the measurements the timeline checks
// (timeline.go) make between the inputs they send: each returns a list of
// problems, or the coordinates of what to click next. It reads the page
// only; the page is driven by real mouse and keyboard input.
(() => {
  const tol = 0.75;
  const vis = (el) => {
    if (el.closest('[hidden]')) return false;
    const cs = getComputedStyle(el);
    return cs.display !== 'none' && cs.visibility !== 'hidden';
  };
  const name = (el) => {
    const sec = el.closest('section');
    return (sec ? sec.getAttribute('aria-label') + ': ' : '') + el.tagName.toLowerCase() + '.' + (el.getAttribute('class') || '').trim().replace(/\s+/g, '.');
  };
  const box = (r) => `[${r.left.toFixed(1)}, ${r.top.toFixed(1)} – ${r.right.toFixed(1)}, ${r.bottom.toFixed(1)}]`;
  const FAILS = ['denied', 'failed', 'timeout', 'aborted'];
  const flush = () => window.timeline.flush && window.timeline.flush();
  window.__pc = {
    flush,
    // Every failure marker drawn is at least 10×10 px, inside its lane's
    // plot, filled, and the kinds' fills differ from each other and from
    // the bars of calls that succeeded.
    markers() {
      flush();
      const problems = [];
      const fills = new Map();
      const okFills = new Set([...document.querySelectorAll('section.lane g.bar:not(.denied):not(.failed):not(.timeout):not(.aborted) > rect.b')]
        .filter(vis).slice(0, 500).map((r) => getComputedStyle(r).fill));
      let n = 0;
      for (const m of document.querySelectorAll('section.lane path.mk')) {
        if (!vis(m)) continue;
        n++;
        const r = m.getBoundingClientRect();
        const vp = m.ownerSVGElement.getBoundingClientRect();
        if (r.width < 9.95 || r.height < 9.95) problems.push(`marker ${name(m)} is ${r.width.toFixed(1)}×${r.height.toFixed(1)} px, under 10×10`);
        if (r.left < vp.left - tol || r.right > vp.right + tol) problems.push(`marker ${name(m)} at ${box(r)} leaves its plot ${box(vp)}`);
        const kind = FAILS.find((k) => m.classList.contains(k));
        const fill = getComputedStyle(m).fill;
        if (!kind) problems.push(`marker ${name(m)} names no kind of failure`);
        else if (fill === 'none' || !fill) problems.push(`marker ${name(m)} has no fill`);
        else {
          if (fills.has(kind) && fills.get(kind) !== fill) problems.push(`markers of ${kind} have two fills: ${fills.get(kind)} and ${fill}`);
          fills.set(kind, fill);
          if (okFills.has(fill)) problems.push(`marker ${name(m)} has the fill of a call that succeeded (${fill})`);
        }
      }
      const seen = [...fills.entries()];
      for (let i = 0; i < seen.length; i++) for (let j = i + 1; j < seen.length; j++) {
        if (seen[i][1] === seen[j][1]) problems.push(`markers of ${seen[i][0]} and ${seen[j][0]} look the same (${seen[i][1]})`);
      }
      return { problems, count: n };
    },
    // Turn frames lie inside their lane's plot (the whole run is shown).
    frames() {
      flush();
      const problems = [];
      for (const f of document.querySelectorAll('section.lane rect.turn')) {
        if (!vis(f)) continue;
        const r = f.getBoundingClientRect(), vp = f.ownerSVGElement.getBoundingClientRect();
        if (r.left < vp.left - tol || r.right > vp.right + tol) problems.push(`turn frame ${name(f)} "${f.textContent}" at ${box(r)} is cut by its plot ${box(vp)}`);
      }
      return problems;
    },
    // Counts of what is drawn, from the DOM (the page's own state is
    // compared with these).
    counts() {
      flush();
      const bars = [...document.querySelectorAll('section.lane g.bar')].filter(vis);
      return {
        bars: bars.length,
        failureBars: bars.filter((b) => FAILS.some((k) => b.classList.contains(k))).length,
        lanes: [...document.querySelectorAll('section.lane')].filter((s) => !s.hidden).length,
        tableRows: document.querySelectorAll('#calltable tbody tr').length,
        tip: getComputedStyle(document.getElementById('tip')).display !== 'none' ? document.getElementById('tip').textContent : '',
      };
    },
    // The viewport centre of the first element matching sel, scrolled
    // into view; null if none is visible.
    at(sel, scroll) {
      const el = [...document.querySelectorAll(sel)].find(vis);
      if (!el) return null;
      if (scroll) el.scrollIntoView({ block: 'center', inline: 'nearest' });
      const r = el.getBoundingClientRect();
      // A point where the element itself is hit (a marker's centre may be
      // a gap in its shape; something may cover part of it).
      let x = r.left + r.width / 2, y = r.top + r.height / 2, hit = false;
      for (let i = 0; i < 7 && !hit; i++) for (let j = 0; j < 7 && !hit; j++) {
        const px = r.left + (r.width * (i + 0.5)) / 7, py = r.top + (r.height * (j + 0.5)) / 7;
        const e = document.elementFromPoint(px, py);
        if (e && (e === el || el.contains(e))) { x = px; y = py; hit = true; }
      }
      return { x, y, hit, left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: (el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 80) };
    },
  };
  return true;
})()
