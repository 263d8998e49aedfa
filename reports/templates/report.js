// acp-reports: small conveniences. Every page reads fine without them. Frame text is only ever
// read and written through textContent, never parsed as HTML.
(function () {
  'use strict';

  // Checkboxes that toggle a class on <body> (filters: only failing rows, hide a plane).
  document.querySelectorAll('input[data-body-class]').forEach(function (box) {
    var apply = function () {
      document.body.classList.toggle(box.getAttribute('data-body-class'), box.checked);
    };
    box.addEventListener('change', apply);
    apply();
  });

  // Pretty-print JSON frames in place, and back.
  var pretty = document.getElementById('pretty');
  if (pretty) {
    var original = new Map();
    pretty.addEventListener('change', function () {
      document.querySelectorAll('pre[data-json]').forEach(function (pre) {
        if (!original.has(pre)) original.set(pre, pre.textContent);
        var text = original.get(pre);
        if (!pretty.checked) { pre.textContent = text; return; }
        try { pre.textContent = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { pre.textContent = text; }
      });
      // Rows changed height: keep the linked frame in view.
      var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    });
  }

  // Copy buttons: <button data-copy="element-id">.
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      if (!source) return;
      var done = function () {
        button.textContent = 'copied';
        setTimeout(function () { button.textContent = 'copy'; }, 1500);
      };
      var select = function () {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = 'selected: press Ctrl+C';
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(source.textContent).then(done, select);
      } else {
        select();
      }
    });
  });

  // A linked frame must be visible even if its plane is filtered out.
  var reveal = function () {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target && target.offsetParent === null) {
      ['hide-wire', 'hide-control', 'hide-note', 'only-attention'].forEach(function (c) {
        document.body.classList.remove(c);
        var box = document.querySelector('input[data-body-class="' + c + '"]');
        if (box) box.checked = false;
      });
      target.scrollIntoView();
    }
  };
  window.addEventListener('hashchange', reveal);
  reveal();
})();
