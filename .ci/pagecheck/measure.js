// measure.js runs in the page after it loaded and returns a list of
// problems, each naming the element. It checks that nothing overflows its
// box: every SVG text lies inside its SVG viewport and inside the window,
// touches no other text, is not struck through by a line (grid lines
// excepted) and does not straddle the edge of a shape (a label sits inside
// a bar or clear of it); HTML text stays inside the window and no element
// clips or scrolls its content sideways; the page does not scroll
// horizontally. It also lists every reference to another origin in the DOM.
(() => {
  const problems = [];
  const tol = 0.75; // px: antialiasing and rounding
  const doc = document.documentElement;
  const winW = doc.clientWidth || innerWidth;

  const short = (s, n) => { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n - 1) + '…' : s; };
  const describe = (el) => {
    let d = el.tagName.toLowerCase();
    if (el.id) d += '#' + el.id;
    const cls = el.getAttribute && el.getAttribute('class');
    if (cls) d += '.' + cls.trim().split(/\s+/).join('.');
    const txt = short(el.textContent, 40);
    if (txt && el.tagName.toLowerCase() !== 'svg' && el.tagName.toLowerCase() !== 'section') d += ' "' + txt + '"';
    const ctx = [];
    for (let p = el.parentElement; p; p = p.parentElement) {
      const l = p.getAttribute('aria-label');
      if (l) ctx.unshift(short(l, 50));
      if (ctx.length >= 2) break;
    }
    if (ctx.length) d += ' (in ' + ctx.map((c) => '"' + c + '"').join(' › ') + ')';
    return d;
  };
  const box = (r) => `[${r.left.toFixed(1)}, ${r.top.toFixed(1)} – ${r.right.toFixed(1)}, ${r.bottom.toFixed(1)}]`;
  const visible = (el) => {
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > tol && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > tol;
  const inside = (a, b) => a.left >= b.left - tol && a.right <= b.right + tol && a.top >= b.top - tol && a.bottom <= b.bottom + tol;

  // The page does not scroll sideways.
  if (doc.scrollWidth > doc.clientWidth + 1) {
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > doc.clientWidth + 1)
      .filter((e) => ![...e.children].some((c) => c.getBoundingClientRect().right > doc.clientWidth + 1))
      .slice(0, 3).map(describe);
    problems.push(`the page scrolls horizontally: it is ${doc.scrollWidth}px wide in a ${doc.clientWidth}px window; widest: ${wide.join('; ') || 'the root element'}`);
  }

  // SVG text.
  const texts = [...document.querySelectorAll('text')].filter(visible);
  const bySvg = new Map();
  for (const t of texts) {
    const svg = t.ownerSVGElement;
    if (!svg) continue;
    const r = t.getBoundingClientRect();
    const vp = svg.getBoundingClientRect();
    if (!inside(r, vp)) problems.push(`${describe(t)} at ${box(r)} overflows its svg viewport ${box(vp)}`);
    if (r.left < -tol || r.right > winW + tol) problems.push(`${describe(t)} at ${box(r)} is outside the ${winW}px window`);
    if (!bySvg.has(svg)) bySvg.set(svg, []);
    bySvg.get(svg).push([t, r]);
  }
  for (const [svg, ts] of bySvg) {
    for (let i = 0; i < ts.length; i++) {
      for (let j = i + 1; j < ts.length; j++) {
        if (overlap(ts[i][1], ts[j][1])) problems.push(`${describe(ts[i][0])} at ${box(ts[i][1])} overlaps ${describe(ts[j][0])} at ${box(ts[j][1])}`);
      }
    }
    const vp = svg.getBoundingClientRect();
    const shapes = [...svg.querySelectorAll('line, rect, circle, ellipse')].filter((s) => s.ownerSVGElement === svg);
    for (const s of shapes) {
      if (s.classList.contains('grid') || s.closest('defs, clipPath, mask, pattern, marker, symbol')) continue;
      const cs = getComputedStyle(s);
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) continue;
      let r = s.getBoundingClientRect();
      if (s.tagName !== 'line' && (r.width <= 0 || r.height <= 0)) continue;
      if (s.tagName === 'line') {
        if (cs.stroke === 'none') continue;
        const half = (parseFloat(cs.strokeWidth) || 1) / 2;
        r = { left: r.left - half, right: r.right + half, top: r.top - half, bottom: r.bottom + half };
        for (const [t, tr] of ts) {
          if (overlap(tr, r)) problems.push(`${describe(t)} at ${box(tr)} is struck through by ${describe(s)} at ${box(r)}`);
        }
        continue;
      }
      // A background covering the whole chart holds everything.
      if (r.width * r.height >= 0.9 * vp.width * vp.height) continue;
      for (const [t, tr] of ts) {
        if (overlap(tr, r) && !inside(tr, r)) problems.push(`${describe(t)} at ${box(tr)} straddles the edge of ${describe(s)} at ${box(r)}`);
      }
    }
  }

  // HTML text stays in the window; nothing clips or scrolls sideways.
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg, script, style, template') || !visible(el)) continue;
    for (const n of el.childNodes) {
      if (n.nodeType !== Node.TEXT_NODE || !n.textContent.trim()) continue;
      const rg = document.createRange();
      rg.selectNodeContents(n);
      const r = rg.getBoundingClientRect();
      if (r.width > 0 && (r.left < -tol || r.right > winW + tol)) problems.push(`text of ${describe(el)} at ${box(r)} is outside the ${winW}px window`);
      // An ancestor that clips (or ellipsizes) must hold the text in its
      // content box: text in its padding is already cut off by an ellipsis.
      for (let p = el; p && p !== document.body; p = p.parentElement) {
        const pcs = getComputedStyle(p);
        if (pcs.overflowX === 'visible') continue;
        const pr = p.getBoundingClientRect();
        const left = pr.left + p.clientLeft + parseFloat(pcs.paddingLeft);
        const right = pr.left + p.clientLeft + p.clientWidth - parseFloat(pcs.paddingRight);
        if (r.width > 0 && (r.left < left - tol || r.right > right + tol)) {
          problems.push(`text of ${describe(el)} at ${box(r)} is cut off by ${p === el ? 'its own box' : describe(p)} (content ${left.toFixed(1)}–${right.toFixed(1)})`);
        }
        break;
      }
    }
    const cs = getComputedStyle(el);
    if (cs.overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${describe(el)} cuts off or scrolls its content sideways (${el.scrollWidth}px of content in ${el.clientWidth}px)`);
    }
  }

  // References to other origins.
  const external = /^\s*(https?:|\/\/|wss?:|ftp:)/i;
  const refs = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of ['src', 'href', 'xlink:href', 'srcset', 'poster', 'data', 'action', 'background']) {
      const v = el.getAttribute(a);
      if (v && external.test(v)) refs.push(`${describe(el)} ${a}="${short(v, 80)}"`);
    }
    const st = el.getAttribute('style');
    if (st && /url\(\s*['"]?\s*(https?:|\/\/)/i.test(st)) refs.push(`${describe(el)} style="${short(st, 80)}"`);
  }
  for (const s of document.querySelectorAll('style')) {
    if (/@import|url\(\s*['"]?\s*(https?:|\/\/)/i.test(s.textContent)) refs.push(`a <style> imports or loads from another origin: ${short(s.textContent.match(/(@import[^;]*|url\([^)]*\))/i)[0], 80)}`);
  }
  for (const r of refs) problems.push('reference to another origin: ' + r);

  return { problems, texts: texts.length, width: winW, height: doc.scrollHeight };
})()
