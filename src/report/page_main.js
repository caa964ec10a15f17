/* page_main.js: the report's page script, part 4 of 4 (see page.js): writes the sections,
 * draws the charts, records what was drawn, applies #only, and closes the script's function. */
  var head = add(root, 'header');
  add(head, 'h1', null, 'trainbench report');
  add(head, 'p', null, data.store + ' · made ' + data.generated + ' · trainbench ' + data.code_version);
  var nav = add(head, 'nav');
  try {
    data.benchmarks.forEach(benchmark);
    if (data.studies) studies(data.studies);
    if (data.hardware) hardware(data.hardware);
  } catch (e) {
    checks.errors.push(String(e && e.stack || e));
  }
  checks.sections.forEach(function (id) {
    var a = add(nav, 'a', null, document.getElementById(id).querySelector('h2').textContent);
    a.href = '#' + id;
  });
  charts.forEach(function (c) {
    c.chart.draw();
    var ctx = c.canvas.getContext('2d');
    var px = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data, ink = 0;
    for (var i = 3; i < px.length; i += 4) if (px[i]) ink++;
    var points = c.chart.data.datasets.reduce(function (a, d) { return a + d.data.filter(function (v) { return v !== null; }).length; }, 0);
    var fig = document.getElementById(c.id);
    checks.charts.push({ id: c.id, expected: c.expected, series: c.chart.data.datasets.length,
                         points: points, ink: ink, width: c.canvas.width, height: c.canvas.height,
                         figure_width: fig.offsetWidth, figure_height: fig.offsetHeight });
  });
  /* #only=ID shows that section alone (the test's screenshots, one per section); #only=FIG&w=W
   * that figure alone, W px wide, at the page's corner on white (report --format png) */
  var only = /^#only=([^&]+)(?:&w=(\d+))?$/.exec(location.hash);
  var alone = only && document.getElementById(only[1]);
  if (alone && alone.tagName === 'FIGURE') {
    var box = add(document.body, 'div', 'alone');
    box.style.width = (Number(only[2]) || alone.offsetWidth) + 'px';
    box.appendChild(alone);
    root.style.display = 'none';
    document.body.className = 'alone';
    charts.forEach(function (c) { if (c.id === alone.id) c.chart.resize(); });
    only = null;
  }
  checks.sections = checks.sections.map(function (id) {
    var sec = document.getElementById(id);
    if (only && only[1] !== id) sec.style.display = 'none';
    return { id: id, height: sec.offsetHeight };
  });
  if (only) nav.style.display = 'none';
  checks.height = document.documentElement.scrollHeight;
  checks.done = true;
  var out = add(document.body, 'pre');
  out.id = 'report-checks';
  out.hidden = true;
  out.textContent = JSON.stringify(checks);
})();
