// abibench's in-page runner of Octane 2.0 (the npm package benchmark-octane, served by
// abibench under /vendor/octane/ at run time).
//
// It makes the same call as the package's own Node.js runner: BenchmarkSuite.RunSuites with
// config.doWarmup and config.doDeterministic left to each benchmark, so every score means what
// the Node runner's "Name: N" line means (100 x reference time / geometric mean of the measured
// times) and the two can be compared: V8 in Node against V8 in the browser. In a page, base.js
// yields to the event loop between steps (setTimeout 25 ms), which the browser must not throttle
// (run/browser.py starts it with the flags that prevent that).
'use strict';

(function () {
  const VENDOR = '/vendor/octane/';
  // The files of each group of suites, after base.js, in Octane's order; one file can define
  // two suites (splay.js: Splay and SplayLatency; mandreel.js: Mandreel and MandreelLatency).
  const GROUPS = [
    [['Richards'], ['richards.js']],
    [['DeltaBlue'], ['deltablue.js']],
    [['Crypto'], ['crypto.js']],
    [['RayTrace'], ['raytrace.js']],
    [['EarleyBoyer'], ['earley-boyer.js']],
    [['RegExp'], ['regexp.js']],
    [['Splay', 'SplayLatency'], ['splay.js']],
    [['NavierStokes'], ['navier-stokes.js']],
    [['PdfJS'], ['pdfjs.js']],
    [['Mandreel', 'MandreelLatency'], ['mandreel.js']],
    [['Gameboy'], ['gbemu-part1.js', 'gbemu-part2.js']],
    [['CodeLoad'], ['code-load.js']],
    [['Box2D'], ['box2d.js']],
    [['zlib'], ['zlib.js', 'zlib-data.js']],
    [['Typescript'], ['typescript.js', 'typescript-input.js', 'typescript-compiler.js']],
  ];
  const NAMES = GROUPS.flatMap((g) => g[0]);
  const log = (line) => { document.getElementById('log').textContent += line + '\n'; };

  // In order, one after the other, like <script> tags in the page.
  function load(files, done) {
    if (!files.length) return done();
    const s = document.createElement('script');
    s.src = VENDOR + files[0];
    s.onload = () => load(files.slice(1), done);
    s.onerror = () => abibench.fail(new Error(`cannot load ${s.src}: is the package there?`));
    document.head.appendChild(s);
  }

  function main() {
    const t0 = performance.now();
    const raw = new URLSearchParams(location.search).get('suites');
    const wanted = !raw || raw === 'all' ? null : raw.split(',').filter(Boolean);
    for (const w of wanted || []) {
      if (!NAMES.includes(w)) throw new Error(`unknown suite ${w} (known: ${NAMES})`);
    }
    const groups = GROUPS.filter((g) => !wanted || g[0].some((n) => wanted.includes(n)));
    const files = ['base.js', ...groups.flatMap((g) => g[1])];
    load(files, () => {
      const t1 = performance.now();
      /* global BenchmarkSuite */
      BenchmarkSuite.config.doWarmup = undefined;
      BenchmarkSuite.config.doDeterministic = undefined;
      // Suites a loaded file defines but that were not asked for are skipped.
      const skip = BenchmarkSuite.suites.map((s) => s.name)
        .filter((name) => wanted && !wanted.includes(name));
      const results = {}, errors = {};
      BenchmarkSuite.RunSuites({
        NotifyResult(name, score) {
          if (score !== 'Skipped') results[name] = Number(score);
          log(`${name}: ${score}`);
        },
        NotifyError(name, error) { errors[name] = String(error); log(`${name}: ${error}`); },
        NotifyScore(score) {
          const ran = Object.keys(results);
          const complete = ran.length === NAMES.length;
          // Octane's own score when every suite ran; with some skipped, Octane counts each
          // skipped one as the reference (1.0), so the score is then the geometric mean of
          // the suites that ran.
          const logs = ran.map((n) => Math.log(results[n]));
          const mean = Math.exp(logs.reduce((a, b) => a + b, 0) / Math.max(1, logs.length));
          const out = {
            schema: 'abibench-octane/1', version: BenchmarkSuite.version, results,
            score: complete ? Number(score) : mean, complete, suites: ran,
            load_ms: Math.round(t1 - t0), run_ms: Math.round(performance.now() - t1),
            user_agent: navigator.userAgent,
          };
          // Every selected sub-test must have scored: one that neither scored nor threw
          // (a file that defined no suite) is as much a failure as one that threw.
          const unscored = (wanted || NAMES).filter((n) => !(n in results) && !(n in errors));
          if (Object.keys(errors).length) {
            abibench.fail(new Error(`Octane reported errors: ${JSON.stringify(errors)}`), out);
          } else if (unscored.length) {
            abibench.fail(new Error(`Octane gave no score for ${unscored.join(', ')}`), out);
          } else {
            abibench.finish(out);
          }
        },
      }, skip);
    });
  }

  abibench.start(main);
})();
