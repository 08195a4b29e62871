// flow console: live updates (server-sent events) and teach-by-clicking on the halt frame. No framework.
(function () {
  function bindTeach() {
    var svg = document.getElementById('halt-frame'), form = document.getElementById('teach-form');
    if (!svg || !form) return;
    svg.addEventListener('click', function (ev) {
      var pt = svg.createSVGPoint(); pt.x = ev.clientX; pt.y = ev.clientY;
      var p = pt.matrixTransform(svg.getScreenCTM().inverse());
      var x = Math.round(p.x), y = Math.round(p.y);
      document.getElementById('teach-x').value = x; document.getElementById('teach-y').value = y;
      document.getElementById('teach-point').textContent = 'point ' + x + ',' + y + ' on the halt frame';
      document.getElementById('teach-submit').disabled = false;
      var old = document.getElementById('teach-mark'); if (old) old.remove();
      var c = document.createElementNS('http://www.w3.org/2000/svg', 'circle');
      c.setAttribute('id', 'teach-mark'); c.setAttribute('cx', x); c.setAttribute('cy', y); c.setAttribute('r', 8);
      c.setAttribute('fill', 'none'); c.setAttribute('stroke', '#e0007a'); c.setAttribute('stroke-width', 3);
      svg.appendChild(c);
    });
  }
  function refresh() {
    if (document.getElementById('teach-x') && document.getElementById('teach-x').value) return; // keep a chosen point
    var url = location.pathname + (location.search ? location.search + '&' : '?') + 'part=main';
    fetch(url, {credentials: 'same-origin'}).then(function (r) { return r.ok ? r.text() : null; }).then(function (html) {
      if (html === null) return;
      document.getElementById('main').innerHTML = html; bindTeach();
    });
  }
  bindTeach();
  var run = document.body.getAttribute('data-run');
  var es = new EventSource('/events' + (run ? '?run=' + encodeURIComponent(run) : ''));
  es.addEventListener('changed', refresh);
})();
