// Loads an atoll HTML report in headless Chromium and checks it as a reader
// would see it: no console errors, no network requests (the page must work
// offline), every chart canvas drew, every series in it has all its points
// placed inside the plot, and the plot has ink in each series' colour; at a
// laptop's 1366 px the summary tables fit and no figure in them is split
// over two lines; the time-to-loss target is the baseline rule's.
// Saves a full-page screenshot.
//
// With --whatif, also the what-if network sliders, moved with the keyboard
// to each given network in turn (bandwidth in B/s, latency in s; grid
// points): the wall-clock chart's x values must change (not its losses), and
// the retimed table cells, wall-clock chart and crossover chart must equal
// what atoll retime wrote for that network (<retimed>/<run>/, one folder per
// run of <runs>), read here from the run folders' files, independently of
// the page's script. A second screenshot shows the page at the first network.
//   node check_report.mjs <report.html> <screenshot.png>
//        [--whatif <runs> <screenshot2.png> <bandwidth>,<latency>,<retimed> ...]
// Exit 0: all good; 1: a check failed (printed); 2: usage or browser trouble.
import { chromium } from 'playwright-core';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [html, shot, flag, runsDir, shot2, ...networkArgs] = process.argv.slice(2);
const whatif = flag === '--whatif';
const networks = networkArgs.map((a) => {
  const [bandwidth, latency, retimed] = a.split(',');
  return { bandwidth: Number(bandwidth), latency: Number(latency), retimed };
});
if (!html || !shot || (flag !== undefined && (!whatif || networks.length === 0 || networks.some((n) => !n.retimed)))) {
  console.error('usage: node check_report.mjs <report.html> <screenshot.png> ' +
                '[--whatif <runs> <screenshot2.png> <bandwidth>,<latency>,<retimed> ...]');
  process.exit(2);
}

// What atoll retime's run folders say, per setting (runs named <setting>_s<k>):
// the mean time to the target over its seeds (the first evaluation after
// step 0 at or below it; a seed that never reaches it counts at its run's
// end, a lower bound: src/report/target_time.h), how many reached it, the
// mean total simulated time and the mean time of each evaluation.
function expectedFromRetimed(retimedDir, target) {
  const settings = new Map();
  for (const name of readdirSync(retimedDir).sort()) {
    const dir = join(retimedDir, name);
    if (!statSync(dir).isDirectory()) continue;
    const evals = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.trim())
      .map((l) => JSON.parse(l)).filter((e) => e.event === 'eval');
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
    const hit = evals.find((e) => e.step > 0 && e.val_loss <= target);
    const setting = name.replace(/_s\d+$/, '');
    if (!settings.has(setting)) settings.set(setting, { reached: [], times: [], totals: [], evalTimes: [] });
    const s = settings.get(setting);
    if (hit) s.reached.push(hit.sim_time_s);
    s.times.push(hit ? hit.sim_time_s : summary.sim_time_s);
    s.totals.push(summary.sim_time_s);
    s.evalTimes.push(evals.map((e) => e.sim_time_s));
  }
  const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
  const out = {};
  for (const [name, s] of settings) {
    const n = Math.min(...s.evalTimes.map((t) => t.length));
    out[name] = { ttt: mean(s.times), reached: s.reached.length, seeds: s.totals.length,
                  total: mean(s.totals),
                  x: Array.from({ length: n }, (_, i) => mean(s.evalTimes.map((t) => t[i]))) };
  }
  return out;
}
// The page's default target, from the run folders: the baseline's (the DDP
// setting's, ddp_s<k>) eval loss at its last evaluation after step 0 and at
// or before 90% of its steps, the highest over its seeds.
function defaultTarget() {
  let target = -Infinity;
  for (const name of readdirSync(runsDir).filter((n) => /^ddp_s\d+$/.test(n))) {
    const steps = JSON.parse(readFileSync(join(runsDir, name, 'summary.json'), 'utf8')).steps;
    const late = readFileSync(join(runsDir, name, 'metrics.jsonl'), 'utf8').split('\n').filter((l) => l.trim())
      .map((l) => JSON.parse(l)).filter((e) => e.event === 'eval' && e.step > 0 && e.step <= 0.9 * steps);
    target = Math.max(target, late[late.length - 1].val_loss);
  }
  return target;
}
const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
// A shown duration ("12.3 s", "0.0308 s", "4.51e-05 s", "2.5 min", "1.20 h")
// back in seconds, with half a unit of its last digit as the rounding it allows.
function shownSeconds(text) {
  const m = /^([0-9.]+)(?:e([-+][0-9]+))? (s|min|h)\b/.exec(text);
  if (!m) return null;
  const unit = { s: 1, min: 60, h: 3600 }[m[3]] * Math.pow(10, Number(m[2] || 0));
  const decimals = (m[1].split('.')[1] || '').length;
  return { value: Number(m[1]) * unit, slack: 0.5 * Math.pow(10, -decimals) * unit * (1 + 1e-9) };
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
// Flags for a closed network and a root sandbox (see the machine notes).
const args = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
              '--disable-component-update', '--disable-sync'];

const failures = [];

// Every chart: its datasets, where their points landed and how much of each colour the plot holds.
const inspect = (page) => page.evaluate(() => {
  if (typeof Chart === 'undefined') return { canvases: [], charts: [], drawn: NaN, rows: 0 };
  const canvases = [...document.querySelectorAll('canvas')].map((c) => c.id);
  const charts = Object.values(Chart.instances).map((chart) => {
    const area = chart.chartArea;
    const ctx = chart.canvas.getContext('2d');
    const ratio = chart.currentDevicePixelRatio || 1;
    const pixels = ctx.getImageData(area.left * ratio, area.top * ratio, (area.right - area.left) * ratio,
                                    (area.bottom - area.top) * ratio).data;
    // Pixels close to each dataset's line colour, inside the plot area.
    const ink = chart.data.datasets.map((d) => {
      const hex = d.borderColor;
      const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      let n = 0;
      for (let p = 0; p < pixels.length; p += 4)
        if (Math.abs(pixels[p] - rgb[0]) + Math.abs(pixels[p + 1] - rgb[1]) + Math.abs(pixels[p + 2] - rgb[2]) < 40) ++n;
      return n;
    });
    return {
      id: chart.canvas.id,
      datasets: chart.data.datasets.map((d, i) => {
        const meta = chart.getDatasetMeta(i);
        const inside = meta.data.filter((e) => !e.skip && Number.isFinite(e.x) && Number.isFinite(e.y) &&
                                                e.x >= area.left - 1 && e.x <= area.right + 1 &&
                                                e.y >= area.top - 1 && e.y <= area.bottom + 1).length;
        // Covered: every point sits on a point of another series (which may be drawn over it).
        const others = chart.data.datasets.flatMap((_, j) => (j === i ? [] : chart.getDatasetMeta(j).data));
        const covered = meta.data.length > 0 &&
                        meta.data.every((e) => others.some((o) => Math.abs(o.x - e.x) < 3 && Math.abs(o.y - e.y) < 3));
        // A gap (null y: a setting that does not reach the target) is no point to place.
        return { label: d.label, points: d.data.filter((p) => p.y !== null).length, inside, ink: ink[i], covered,
                 band: !!d.band };
      }),
    };
  });
  return { canvases, charts, drawn: Number(document.body.dataset.charts),
           rows: document.querySelectorAll('#summary tbody tr').length };
});

// The summary tables on a laptop screen: with the folded table opened, both
// fit the viewport (no sideways scrolling), and no figure cell's text runs
// over two lines (a number split mid-way: "61.8 s ±" over "0.000551 s").
async function checkLayout(page) {
  const layout = await page.evaluate(() => {
    const details = document.getElementById('summary-details');
    if (details) details.open = true;
    const tables = ['summary', 'summary-more'].map((id) => {
      const t = document.getElementById(id);
      return t && { id, right: t.getBoundingClientRect().right };
    });
    const split = [];
    for (const cell of document.querySelectorAll('#summary td.num, #summary-more td.num')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(node);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) split.push(node.textContent);
      }
    }
    return { tables, split, viewport: document.documentElement.clientWidth,
             scroll: document.documentElement.scrollWidth,
             target: document.getElementById('target')?.dataset };
  });
  for (const t of layout.tables) {
    if (!t) { failures.push('layout: a summary table is missing'); continue; }
    if (t.right > layout.viewport + 0.5)
      failures.push(`layout: #${t.id} ends at ${t.right} px, past the ${layout.viewport} px viewport`);
  }
  if (layout.scroll > layout.viewport) failures.push(`layout: the page scrolls sideways (${layout.scroll} px wide)`);
  for (const text of layout.split) failures.push(`layout: a figure runs over two lines: "${text}"`);
  const target = defaultTarget();
  if (!layout.target || layout.target.rule !== 'baseline' || !close(Number(layout.target.target), target))
    failures.push(`layout: the page's target ${JSON.stringify(layout.target)} is not the baseline rule's ${target}`);
  console.log(`layout at ${layout.viewport} px: summary tables end at ` +
              layout.tables.map((t) => t && `${t.right} px`).join(', ') + `; target ${target} (baseline rule)`);
}

// The page's charts as drawn; `when` prefixes each failure.
function checkCharts(report, when) {
  if (report.charts.length !== report.canvases.length || report.drawn !== report.canvases.length)
    failures.push(when + `charts: ${report.charts.length} drawn for ${report.canvases.length} canvases ` +
                  `(page says ${report.drawn})`);
  if (report.canvases.length < 3) failures.push(when + `only ${report.canvases.length} charts on the page`);
  for (const c of report.charts) {
    if (c.datasets.length === 0) failures.push(when + `${c.id}: no series`);
    for (const d of c.datasets) {
      // A setting that some seed never brought to the target has no crossover
      // line at all (a gap at every bandwidth); checkWhatif compares each
      // setting's points, gaps included, with atoll retime.
      if (c.id === 'crossover' && d.points === 0) continue;
      if (d.points === 0 || d.inside !== d.points)
        failures.push(when + `${c.id}: series ${d.label} placed ${d.inside} of ${d.points} points inside the plot`);
      // A series with no ink at all did not draw, unless another series' points cover all of its own.
      // A seed band's edges are drawn without a line (only the fill between them).
      if (!d.band && d.ink === 0 && !d.covered)
        failures.push(when + `${c.id}: series ${d.label} left no pixels of its colour`);
    }
  }
  if (report.rows === 0) failures.push(when + 'the summary table has no rows');
  // The check's sweep runs every setting with two seeds: each mean curve has its band.
  const lossSteps = report.charts.find((c) => c.id === 'loss-steps');
  if (lossSteps && !lossSteps.datasets.some((d) => d.band))
    failures.push(when + 'loss-steps: no 95% band drawn for the seeded runs');
}

// What the what-if panel shows: its state, the marked table cells and the
// wall-clock and crossover charts' points.
const whatifState = (page) => page.evaluate(() => {
  const panel = document.getElementById('whatif');
  const names = JSON.parse(document.getElementById('atoll-data').textContent).map((r) => r.name);
  const chartPoints = (id) => {
    const chart = Chart.getChart(id);
    return chart ? chart.data.datasets.map((d) => ({ name: names[d.group], edge: d.edge, label: d.label,
                                                     x: d.data.map((p) => p.x), y: d.data.map((p) => p.y) })) : null;
  };
  const net = JSON.parse(document.getElementById('atoll-network')?.textContent || '{}');
  return {
    panel: panel && { ...panel.dataset, hidden: panel.hidden },
    target: net.target, bandwidths: net.bandwidths, latencies: net.latencies,
    cells: [...document.querySelectorAll('[data-whatif]')].map((c) => ({
      kind: c.dataset.whatif, name: names[Number(c.dataset.setting)], value: Number(c.dataset.value),
      text: c.textContent, retimed: c.classList.contains('retimed') })),
    lossTime: chartPoints('loss-time'),
    crossover: chartPoints('crossover'),
  };
});

// Moves the sliders to each network with the keyboard, as a reader would,
// and compares the page with atoll retime's folders for it.
async function checkWhatif(page) {
  const before = await whatifState(page);
  if (!before.panel || before.panel.hidden || before.panel.ready !== 'true') {
    failures.push('whatif: the what-if panel is missing or its script did not run');
    return;
  }
  if (before.panel.applied !== 'recorded') failures.push('whatif: the page does not start with the runs as recorded');
  if (!before.crossover || before.crossover.length === 0) failures.push('whatif: no crossover chart');
  const target = defaultTarget();
  if (!close(before.target, target)) failures.push(`whatif: the page's target ${before.target} is not ${target}`);
  for (const [i, n] of networks.entries()) {
    const where = `at ${n.bandwidth} B/s, ${n.latency} s: `;
    // Slider positions are grid indices: Home, then one ArrowRight per step.
    for (const [id, value, grid] of [['bandwidth', n.bandwidth, before.bandwidths],
                                     ['latency', n.latency, before.latencies]]) {
      const index = grid.findIndex((v) => close(v, value));
      if (index < 0) { failures.push(where + `${value} is not on the page's ${id} grid ${grid}`); return; }
      await page.focus('#whatif-' + id);
      await page.keyboard.press('Home');
      for (let k = 0; k < index; ++k) await page.keyboard.press('ArrowRight');
    }
    const after = await whatifState(page);
    if (i === 0) await page.screenshot({ path: shot2, fullPage: true });
    if (after.panel.applied !== 'grid' || Number(after.panel.bandwidth) !== n.bandwidth ||
        Number(after.panel.latency) !== n.latency) {
      failures.push(where + `the page shows ${JSON.stringify(after.panel)}`);
      continue;
    }
    compareWithRetimed(before, after, expectedFromRetimed(n.retimed, target), n, where);
    checkCharts(await inspect(page), where);
  }

  // "as recorded" puts every cell back.
  await page.click('#whatif-recorded');
  const back = await whatifState(page);
  if (back.panel.applied !== 'recorded' ||
      back.cells.some((c, i) => c.text !== before.cells[i].text || c.value !== before.cells[i].value || c.retimed))
    failures.push('whatif: "as recorded" did not restore the table');
  console.log(`whatif: checked at ${networks.length} networks against atoll retime; screenshot: ${shot2}`);
}

function compareWithRetimed(before, after, expected, network, where) {
  const settings = Object.keys(expected);
  // The wall-clock chart: the retimed evaluation times as x, the same losses.
  before.lossTime.forEach((b, i) => {
    const a = after.lossTime[i], e = expected[b.name];
    if (!e) { failures.push(where + `loss-time series ${b.label} belongs to no retimed setting`); return; }
    if (JSON.stringify(a.y) !== JSON.stringify(b.y)) failures.push(where + `loss-time ${b.label}: the losses changed`);
    if (a.x.length !== e.x.length || !a.x.every((x, j) => close(x, e.x[j])))
      failures.push(where + `loss-time ${b.label}: x ${a.x} is not atoll retime's ${e.x}`);
  });
  for (const name of settings) {
    const b = before.lossTime.find((d) => d.name === name && d.edge === 'y');
    const a = after.lossTime.find((d) => d.name === name && d.edge === 'y');
    if (!a || !b) { failures.push(where + `loss-time has no curve for ${name}`); continue; }
    const moved = !a.x.every((x, j) => close(x, b.x[j]));
    // The sweep's one-worker setting sends nothing: the network changes none of
    // its times. Every other setting is slower than on its recorded 1 Gbit/s.
    const talks = name !== 'single';
    if (moved !== talks)
      failures.push(where + `loss-time ${name}: x ${moved ? 'changed' : 'did not change'} (${b.x} -> ${a.x})`);
  }

  // The table: every marked cell retimed; time to loss and total time as atoll retime gives them.
  for (const name of settings) {
    const e = expected[name];
    const cell = (kind) => after.cells.find((c) => c.kind === kind && c.name === name);
    const ttt = cell('ttt'), total = cell('total');
    if (!ttt || !total) { failures.push(where + `no marked time cells for ${name}`); continue; }
    for (const [c, want] of [[ttt, e.ttt], [total, e.total]]) {
      if (!c.retimed) failures.push(where + `${name} ${c.kind}: not marked retimed`);
      if (!close(c.value, want))
        failures.push(where + `${name} ${c.kind}: the page has ${c.value}, atoll retime ${want}`);
      // A lower bound reads "\u2265 T (k of K reached)".
      const shown = shownSeconds(c.text.replace(/^\u2265 /, ''));
      if (!shown || Math.abs(shown.value - want) > shown.slack)
        failures.push(where + `${name} ${c.kind}: shows "${c.text}" for ${want} s`);
    }
    const censored = e.reached < e.seeds;
    if (censored !== ttt.text.startsWith('\u2265 ') ||
        (censored && !ttt.text.includes(`(${e.reached} of ${e.seeds} reached)`)))
      failures.push(where + `${name}: "${ttt.text}" does not say ${e.reached} of ${e.seeds} seeds reached it`);
    const was = before.cells.find((c) => c.kind === 'ttt' && c.name === name);
    console.log(`whatif ${where}${name}: time to loss ${was.text} -> ${ttt.text} (atoll retime: ${e.ttt} s, ` +
                `${e.reached} of ${e.seeds} seeds); total ${total.text}`);
  }

  // The crossover chart at the slider's bandwidth: each setting's time when every seed reached it, else a gap.
  const x = 8 * network.bandwidth;
  for (const name of settings) {
    const line = after.crossover.find((d) => d.name === name);
    const j = line ? line.x.findIndex((v) => close(v, x)) : -1;
    if (j < 0) { failures.push(where + `crossover: no point of ${name} at ${x} bit/s`); continue; }
    const e = expected[name], want = e.reached === e.seeds ? e.ttt : null;
    if (want === null ? line.y[j] !== null : !close(line.y[j], want))
      failures.push(where + `crossover ${name} at ${x} bit/s: ${line.y[j]}, atoll retime ${want}`);
  }
}

const browser = await chromium.launch({ executablePath, args, headless: true });
try {
  // A laptop's screen: the summary tables must fit it.
  const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') failures.push('console error: ' + m.text()); });
  page.on('pageerror', (e) => failures.push('page error: ' + e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) failures.push('network request: ' + r.url());
  });
  await page.goto('file://' + resolve(html));
  try {
    await page.waitForSelector('body[data-charts]', { state: 'attached', timeout: 15000 });
  } catch (e) {
    failures.push('the charts never finished drawing (body[data-charts] not set within 15 s)');
  }

  await checkLayout(page);
  const report = await inspect(page);
  checkCharts(report, '');
  await page.screenshot({ path: shot, fullPage: true });
  for (const c of report.charts)
    console.log(`${c.id}: ` + c.datasets.map((d) => `${d.label} ${d.inside}/${d.points} points, ${d.ink} px`).join('; '));
  console.log(`summary rows: ${report.rows}; screenshot: ${shot}`);
  if (whatif) await checkWhatif(page);
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error('FAIL ' + f);
  process.exit(1);
}
console.log('report OK in ' + executablePath);
