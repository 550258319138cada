// abibench's DOM workload: lists and tables of n elements built, updated, sorted, filtered and
// removed, and n shapes drawn on a 2D canvas.
//
// Each sub-test runs one operation `warmup` times untimed, then `reps` times timed. Every
// operation ends by reading offsetHeight, which forces style recalculation and layout inside
// the timing. The metric is operations per second over the timed repetitions; the page's
// score is their geometric mean.
//
// Each sub-test's checksum is an FNV-1a hash over its container's final innerHTML and its own
// counters; the data come from an xorshift32 generator and nothing in the checksummed path uses
// floating point, so the checksum must be the same on every architecture. layout_sum (the sum
// of the offsetHeight readings) depends on fonts and layout arithmetic and is reported, never
// checksummed; so is the canvas's pixel hash (rasterisation may differ between builds).
'use strict';

(function () {
  const SCHEMA = 'abibench-dom/1';
  const TESTS = ['list_build', 'list_update', 'table_build', 'table_update', 'table_sort',
                 'table_filter', 'table_remove', 'canvas'];
  const WORDS = ['amber', 'basil', 'cedar', 'dune', 'ember', 'fjord', 'grove', 'heath',
                 'inlet', 'juniper', 'knoll', 'larch', 'moss', 'nettle', 'orchid', 'pine'];
  const KINDS = ['north', 'east', 'south', 'west', 'up', 'down', 'still'];

  // ------------------------------------------------------------------------ parameters

  function whole(q, name, dflt, lo, hi) {
    const raw = q.get(name);
    if (raw === null || raw === '') return dflt;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new Error(`parameter ${name}=${raw}: a whole number from ${lo} to ${hi}`);
    }
    return v;
  }

  function params() {
    const q = new URLSearchParams(location.search);
    const raw = q.get('tests');
    const tests = !raw || raw === 'all' ? TESTS.slice() : raw.split(',').filter(Boolean);
    for (const t of tests) {
      if (!TESTS.includes(t)) throw new Error(`unknown sub-test ${t} (known: ${TESTS})`);
    }
    return {
      n: whole(q, 'n', 10000, 1, 1000000),
      reps: whole(q, 'reps', 3, 1, 10000),
      warmup: whole(q, 'warmup', 1, 0, 10000),
      seed: whole(q, 'seed', 12345, 1, 0x7fffffff),
      px: whole(q, 'px', 512, 16, 4096),
      tests,
    };
  }

  // ------------------------------------------------------------------------ integers only

  function generator(seed) {  // xorshift32
    let s = seed >>> 0 || 1;
    return function () {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      s >>>= 0;
      return s;
    };
  }

  function fnv(text, h) {
    h = h === undefined ? 0x811c9dc5 : h >>> 0;
    for (let i = 0; i < text.length; i++) {
      h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    }
    return h;
  }

  function hex(h) { return (h >>> 0).toString(16).padStart(8, '0'); }

  function records(n, seed) {
    const next = generator(seed);
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = { id: i + 1, name: `${WORDS[next() % 16]} ${WORDS[next() % 16]} ${next() % 997}`,
                 value: next() % 100000, kind: KINDS[next() % KINDS.length] };
    }
    return out;
  }

  // ------------------------------------------------------------------------ building blocks

  function list(rows) {
    const ul = document.createElement('ul');
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = r.name;
      const value = document.createElement('b');
      value.textContent = String(r.value);
      li.append(name, value);
      frag.appendChild(li);
    }
    ul.appendChild(frag);
    return ul;
  }

  function table(rows) {
    const t = document.createElement('table');
    const head = t.createTHead().insertRow();
    for (const title of ['id', 'name', 'value', 'kind']) {
      const th = document.createElement('th');
      th.textContent = title;
      head.appendChild(th);
    }
    const body = t.createTBody();
    const items = [];
    for (const r of rows) {
      const tr = document.createElement('tr');
      for (const v of [r.id, r.name, r.value, r.kind]) {
        const td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      }
      body.appendChild(tr);
      items.push({ tr, r });
    }
    return { t, body, items };
  }

  // A total order (ties broken by id), so the result never depends on the sort's algorithm.
  function order(key, dir) {
    return (a, b) => {
      const x = a.r[key], y = b.r[key];
      if (x !== y) return x < y ? -dir : dir;
      return a.r.id - b.r.id;
    };
  }

  // ------------------------------------------------------------------------ sub-tests
  // Each makes { run(k), counters() }: run is one operation (k counts warm-ups and timed
  // repetitions alike), counters go into the checksum.

  const MAKERS = {
    list_build(host, p, rows) {
      return {
        run() {
          host.textContent = '';
          host.appendChild(list(rows));
        },
        counters: () => [],
      };
    },

    list_update(host, p, rows) {
      const ul = host.appendChild(list(rows));
      const items = Array.from(ul.children);
      let changed = 0;
      return {
        run(k) {
          for (let i = k % 10; i < items.length; i += 10) {
            items[i].firstChild.textContent = `${rows[i].name} #${k}`;
            changed++;
          }
          for (let i = 0; i < items.length; i++) {
            items[i].className = (rows[i].value + k) % 3 === 0 ? 'hl' : (i & 1 ? 'odd' : '');
          }
        },
        counters: () => [changed],
      };
    },

    table_build(host, p, rows) {
      return {
        run() {
          host.textContent = '';
          host.appendChild(table(rows).t);
        },
        counters: () => [],
      };
    },

    table_update(host, p, rows) {
      const tb = table(rows);
      host.appendChild(tb.t);
      let changed = 0;
      return {
        run(k) {
          for (let i = k % 10; i < tb.items.length; i += 10) {
            tb.items[i].tr.cells[2].textContent = String(tb.items[i].r.value + k);
            changed++;
          }
          for (let i = 0; i < tb.items.length; i++) {
            tb.items[i].tr.className = (tb.items[i].r.value + k) % 5 === 0 ? 'hl'
              : (i & 1 ? 'odd' : '');
          }
        },
        counters: () => [changed],
      };
    },

    table_sort(host, p, rows) {
      const tb = table(rows);
      host.appendChild(tb.t);
      const keys = ['value', 'name', 'kind', 'id'];
      return {
        run(k) {
          tb.items.sort(order(keys[k % keys.length], k & 1 ? -1 : 1));
          const frag = document.createDocumentFragment();
          for (const it of tb.items) frag.appendChild(it.tr);
          tb.body.appendChild(frag);
        },
        counters: () => [tb.items[0].r.id, tb.items[tb.items.length - 1].r.id],
      };
    },

    table_filter(host, p, rows) {
      const tb = table(rows);
      host.appendChild(tb.t);
      let shown = 0;
      return {
        run(k) {
          shown = 0;
          const kind = KINDS[k % KINDS.length];
          for (const it of tb.items) {
            const show = it.r.kind !== kind && (it.r.value + k) % 4 !== 0;
            it.tr.style.display = show ? '' : 'none';
            shown += show ? 1 : 0;
          }
        },
        counters: () => [shown],
      };
    },

    table_remove(host, p, rows) {
      let removed = 0;
      let tb = null;
      return {
        // Untimed: a fresh table for every repetition.
        prepare() {
          host.textContent = '';
          tb = table(rows);
          host.appendChild(tb.t);
          void host.offsetHeight;
        },
        run() {
          for (let i = 1; i < tb.items.length; i += 2) {
            tb.items[i].tr.remove();
            removed++;
          }
          void host.offsetHeight;  // a layout between the two halves
          for (let i = 0; i < tb.items.length; i += 2) {
            tb.items[i].tr.remove();
            removed++;
          }
        },
        counters: () => [removed],
      };
    },

    canvas(host, p) {
      const c = document.createElement('canvas');
      c.width = p.px;
      c.height = p.px;
      host.appendChild(c);
      const g = c.getContext('2d');
      let stream = 0x811c9dc5;  // hash of every integer drawing parameter: the command stream
      let info = 0;
      return {
        run(k) {
          const next = generator(p.seed + k);
          g.clearRect(0, 0, p.px, p.px);
          for (let i = 0; i < p.n; i++) {
            const x = next() % p.px, y = next() % p.px, s = 2 + next() % 24;
            const colour = next() & 0xffffff;
            const shape = next() % 4;
            g.fillStyle = `#${colour.toString(16).padStart(6, '0')}`;
            g.strokeStyle = g.fillStyle;
            if (shape === 0) {
              g.fillRect(x, y, s, s);
            } else if (shape === 1) {
              g.beginPath();
              g.arc(x, y, s, 0, 2 * Math.PI);
              g.fill();
            } else if (shape === 2) {
              g.beginPath();
              g.moveTo(x, y);
              g.bezierCurveTo(x + s, y - s, x - s, y + 2 * s, x + 2 * s, y + s);
              g.stroke();
            } else {
              g.font = `${8 + s % 12}px "DejaVu Sans"`;
              g.fillText(WORDS[s % 16], x, y);
            }
            stream = fnv(`${x},${y},${s},${colour},${shape};`, stream);
          }
          // Reading a pixel makes the drawing happen inside the timing.
          const px = g.getImageData(0, 0, 1, 1).data;
          info = fnv(Array.from(px).join(','), info);
        },
        counters: () => [stream],
        info: () => ({ first_pixel_hash: hex(info) }),
      };
    },
  };

  // ------------------------------------------------------------------------ the run

  function runTest(name, p, rows, stage) {
    const host = document.createElement('div');
    stage.appendChild(host);
    const test = MAKERS[name](host, p, rows);
    void host.offsetHeight;
    const ms = [];
    let layoutSum = 0;
    for (let k = 0; k < p.warmup + p.reps; k++) {
      if (test.prepare) test.prepare();
      const t0 = performance.now();
      test.run(k);
      const h = host.offsetHeight;  // style and layout, inside the timing
      const t1 = performance.now();
      layoutSum += h;
      if (k >= p.warmup) ms.push(t1 - t0);
    }
    let h = fnv(host.innerHTML);
    for (const c of test.counters()) h = fnv(String(c >>> 0), h);
    const total = ms.reduce((a, b) => a + b, 0);
    const out = {
      reps: p.reps, ms: ms.map((v) => Math.round(v * 1000) / 1000),
      total_ms: Math.round(total * 1000) / 1000,
      // performance.now() is coarsened (100 µs here): size n so one operation takes ms.
      ops_per_s: total > 0 ? p.reps / (total / 1000) : null,
      checksum: hex(h), layout_sum: layoutSum,
    };
    if (test.info) out.info = test.info();
    // Off the document before the next sub-test, so it never lays this one out again.
    host.remove();
    return out;
  }

  function main() {
    const t0 = performance.now();
    const p = params();
    const rows = records(p.n, p.seed);
    const stage = document.getElementById('stage');
    const tests = {};
    let all = 0x811c9dc5, logSum = 0, counted = 0;
    for (const name of p.tests) {
      const r = runTest(name, p, rows, stage);
      if (!(r.ops_per_s > 0) || !Number.isFinite(r.ops_per_s)) {
        throw new Error(`${name}: no measurable time (${r.total_ms} ms): raise n or reps`);
      }
      tests[name] = r;
      all = fnv(`${name}:${r.checksum};`, all);
      logSum += Math.log(r.ops_per_s);
      counted++;
    }
    abibench.finish({
      schema: SCHEMA, params: p, tests, checksum: hex(all),
      score: Math.exp(logSum / counted),  // geometric mean of the sub-tests' ops/s
      wall_ms: Math.round(performance.now() - t0), user_agent: navigator.userAgent,
    });
  }

  abibench.start(main);
})();
