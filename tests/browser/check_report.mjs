// Loads an atoll HTML report in headless Chromium and checks it as a reader
// would see it: no console errors, no network requests (the page must work
// offline), every chart canvas drew, every series in it has all its points
// placed inside the plot, and the plot has ink in each series' colour.
// Saves a full-page screenshot.
//   node check_report.mjs <report.html> <screenshot.png>
// Exit 0: all good; 1: a check failed (printed); 2: usage or browser trouble.
import { chromium } from 'playwright-core';
import { resolve } from 'node:path';

const [html, shot] = process.argv.slice(2);
if (!html || !shot) {
  console.error('usage: node check_report.mjs <report.html> <screenshot.png>');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
// Flags for a closed network and a root sandbox (see the machine notes).
const args = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
              '--disable-component-update', '--disable-sync'];

const failures = [];
const browser = await chromium.launch({ executablePath, args, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
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

  const report = await page.evaluate(() => {
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
          return { label: d.label, points: d.data.length, inside, ink: ink[i], covered, band: !!d.band };
        }),
      };
    });
    return { canvases, charts, drawn: Number(document.body.dataset.charts),
             rows: document.querySelectorAll('#summary tbody tr').length };
  });

  if (report.charts.length !== report.canvases.length || report.drawn !== report.canvases.length)
    failures.push(`charts: ${report.charts.length} drawn for ${report.canvases.length} canvases (page says ${report.drawn})`);
  if (report.canvases.length < 3) failures.push(`only ${report.canvases.length} charts on the page`);
  for (const c of report.charts) {
    if (c.datasets.length === 0) failures.push(`${c.id}: no series`);
    for (const d of c.datasets) {
      if (d.points === 0 || d.inside !== d.points)
        failures.push(`${c.id}: series ${d.label} placed ${d.inside} of ${d.points} points inside the plot`);
      // A series with no ink at all did not draw, unless another series' points cover all of its own.
      // A seed band's edges are drawn without a line (only the fill between them).
      if (!d.band && d.ink === 0 && !d.covered) failures.push(`${c.id}: series ${d.label} left no pixels of its colour`);
    }
  }
  if (report.rows === 0) failures.push('the summary table has no rows');
  // The check's sweep runs every setting with two seeds: each mean curve has its band.
  const lossSteps = report.charts.find((c) => c.id === 'loss-steps');
  if (lossSteps && !lossSteps.datasets.some((d) => d.band))
    failures.push('loss-steps: no 95% band drawn for the seeded runs');
  await page.screenshot({ path: shot, fullPage: true });
  for (const c of report.charts)
    console.log(`${c.id}: ` + c.datasets.map((d) => `${d.label} ${d.inside}/${d.points} points, ${d.ink} px`).join('; '));
  console.log(`summary rows: ${report.rows}; screenshot: ${shot}`);
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error('FAIL ' + f);
  process.exit(1);
}
console.log('report OK in ' + executablePath);
