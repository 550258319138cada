"""deb-cpython: our own small versions of pyperformance's richards, nbody, raytrace, regex and
json benchmarks (pyperformance itself needs pip and virtual environments, which a sysroot
without network does not have). Prints one time per benchmark and a checksum."""

import json
import math
import re
import sys
import time

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 1


# --- richards: an operating-system task scheduler simulation (object and pointer heavy) ---
class Packet:
    def __init__(self, link, ident, kind):
        self.link, self.ident, self.kind, self.datum, self.data = link, ident, kind, 0, [0] * 4


class Task:
    def __init__(self, sched, ident, prio, work, state, fn):
        self.sched, self.ident, self.prio, self.work, self.fn = sched, ident, prio, work, fn
        self.queue, self.held, self.waiting = work, False, work is None and state
        self.link = sched.tasks
        sched.tasks = self

    def runnable(self):
        return not self.held and (self.queue is not None or not self.waiting)


class Scheduler:
    def __init__(self):
        self.tasks, self.count, self.holds, self.qpkts = None, 0, 0, 0
        self.table = {}

    def add(self, ident, prio, work, fn, state=False):
        self.table[ident] = Task(self, ident, prio, work, state, fn)

    def run(self):
        task = self.tasks
        while task is not None:
            if task.runnable():
                pkt = task.queue
                if pkt is not None:
                    task.queue = pkt.link
                task.waiting = False
                task = task.fn(task, pkt) or task.link
            else:
                task = task.link

    def send(self, pkt, dest_id):
        dest = self.table[dest_id]
        self.qpkts += 1
        pkt.link = None
        if dest.queue is None:
            dest.queue = pkt
        else:
            q = dest.queue
            while q.link is not None:
                q = q.link
            q.link = pkt
        return dest if dest.prio > 0 else None


def richards(iterations):
    total = 0
    for _ in range(iterations):
        s = Scheduler()
        state = {"count": 0, "v": 1}

        def idle(task, pkt):
            state["count"] += 1
            if state["count"] > 2000:
                task.held = True
                return None
            state["v"] = (state["v"] >> 1) ^ (0xD008 if state["v"] & 1 else 0)
            return s.send(Packet(None, 0, 1), 2 + (state["v"] & 1))

        def worker(task, pkt):
            if pkt is None:
                task.waiting = True
                return None
            pkt.datum = (pkt.datum + 1) % 26
            for i in range(4):
                pkt.data[i] = (pkt.data[i] * 31 + pkt.datum + i) % 65521
            s.holds += 1
            return None

        s.add(1, 0, None, idle)
        s.add(2, 1000, None, worker, True)
        s.add(3, 2000, None, worker, True)
        s.run()
        total += s.qpkts + s.holds
    return total


# --- nbody: floating point in lists ---
def nbody(steps):
    bodies = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 39.47841760435743],
              [4.84, -1.16, -0.10, 0.606, 2.81, -0.02, 0.037],
              [8.34, 4.12, -0.40, -1.01, 1.82, 0.008, 0.011],
              [12.89, -15.11, -0.22, 1.08, 0.868, -0.010, 0.0017],
              [15.37, -25.91, 0.179, 0.979, 0.594, -0.034, 0.0020]]
    dt = 0.01
    for _ in range(steps):
        for i, a in enumerate(bodies):
            for b in bodies[i + 1:]:
                dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
                d2 = dx * dx + dy * dy + dz * dz
                mag = dt / (d2 * math.sqrt(d2))
                bm, am = b[6] * mag, a[6] * mag
                a[3] -= dx * bm; a[4] -= dy * bm; a[5] -= dz * bm
                b[3] += dx * am; b[4] += dy * am; b[5] += dz * am
        for b in bodies:
            b[0] += dt * b[3]; b[1] += dt * b[4]; b[2] += dt * b[5]
    return round(sum(b[0] + b[1] + b[2] for b in bodies), 3)


# --- raytrace: small objects, method calls, float math ---
class Vec:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o):
        return Vec(self.x - o.x, self.y - o.y, self.z - o.z)

    def scale(self, k):
        return Vec(self.x * k, self.y * k, self.z * k)

    def dot(self, o):
        return self.x * o.x + self.y * o.y + self.z * o.z

    def norm(self):
        return self.scale(1.0 / math.sqrt(self.dot(self)))


def raytrace(size):
    spheres = [(Vec(0, -1, 3), 1.0), (Vec(2, 0, 4), 1.0), (Vec(-2, 0, 4), 1.0),
               (Vec(0, -5001, 0), 5000.0)]
    light = Vec(2, 1, 0)
    total = 0
    for j in range(size):
        for i in range(size):
            d = Vec((i - size / 2) / size, (j - size / 2) / size, 1).norm()
            best, hit = 1e30, None
            for c, r in spheres:
                oc = Vec(0, 0, 0) - c
                b = 2 * oc.dot(d)
                disc = b * b - 4 * (oc.dot(oc) - r * r)
                if disc > 0:
                    t = (-b - math.sqrt(disc)) / 2
                    if 1e-3 < t < best:
                        best, hit = t, c
            if hit is not None:
                p = d.scale(best)
                n = (p - hit).norm()
                total += int(255 * max(0.0, n.dot((light - p).norm())))
    return total


# --- regex: compile-once patterns over generated text ---
def regex(n):
    words = [f"user{i}@host{i % 97}.example" if i % 5 == 0 else f"word{i * 7919 % 10007}"
             for i in range(n)]
    text = " ".join(words)
    pats = [re.compile(r"\b\w+@\w+\.example\b"), re.compile(r"word(\d{3})7\b"),
            re.compile(r"(?:host(\d+))\.")]
    return sum(len(p.findall(text)) for p in pats) + len(re.sub(r"\d+", "#", text))


# --- json: dumps and loads of nested records ---
def json_bench(n):
    data = [{"id": i, "name": f"item-{i}", "tags": ["a", "b", str(i % 13)],
             "price": i * 0.25, "nested": {"ok": i % 2 == 0, "v": [i, i * 2, None]}}
            for i in range(n)]
    total = 0
    for _ in range(5):
        s = json.dumps(data, sort_keys=True)
        total += len(s) + len(json.loads(s))
    return total


BENCHES = [("richards", richards, 150), ("nbody", nbody, 60000), ("raytrace", raytrace, 240),
           ("regex", regex, 120000), ("json", json_bench, 8000)]
check = []
for name, fn, n in BENCHES:
    t0 = time.perf_counter()
    check.append(fn(n * SCALE))
    print(f"{name}: {time.perf_counter() - t0:.4f} s")
print("checksum:", " ".join(str(c) for c in check))
