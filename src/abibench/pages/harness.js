// abibench's page harness: how a benchmark page tells the driver (run/browser.py) it is done.
//
// A page calls abibench.finish(result) once, with a plain object; an exception, an error
// event or abibench.fail(error) ends it with result.error set instead. The driver waits for
// window.__abibench_done (or the "abibench-done" event) and reads window.__abibench_result
// over the DevTools protocol: nothing is scraped from the screen.
'use strict';

window.__abibench_done = false;
window.abibench = (function () {
  let finished = false;

  function finish(result) {
    if (finished) return;
    finished = true;
    window.__abibench_result = Object.assign({ error: null }, result);
    window.__abibench_done = true;
    window.dispatchEvent(new Event('abibench-done'));
  }

  function describe(error) {
    if (error && error.stack) return String(error.stack).slice(0, 2000);
    return String(error).slice(0, 2000);
  }

  function fail(error, partial) {
    finish(Object.assign({}, partial || {}, { error: describe(error) }));
  }

  window.addEventListener('error', (ev) => fail(ev.error || ev.message));
  window.addEventListener('unhandledrejection', (ev) => fail(ev.reason));

  // Runs main() once the page has loaded; an exception it throws ends the page as failed.
  function start(main) {
    window.addEventListener('load', () => setTimeout(() => {
      try {
        main();
      } catch (e) {
        fail(e);
      }
    }, 0));
  }

  return { finish, fail, start };
})();
