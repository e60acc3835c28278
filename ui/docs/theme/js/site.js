// The docs site's only script (plain DOM, no library): the search dialog (s or
// /, Escape closes; the mkdocs search plugin fills the results), and the
// current section marked in the page's table of contents.
(function () {
  function openSearch() {
    var d = document.getElementById('search');
    if (!d) return;
    if (!d.open) d.showModal();
    var q = document.getElementById('mkdocs-search-query');
    if (q) {
      q.focus();
      q.select();
    }
  }
  document.addEventListener('DOMContentLoaded', function () {
    var b = document.getElementById('search-open');
    if (b) b.addEventListener('click', openSearch);
  });
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.key === 's' || e.key === '/') {
      e.preventDefault();
      openSearch();
    }
  });
})();
