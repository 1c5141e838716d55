/* The CU replay of emu/amd/cu_model.py (`_CU.run`) compiled: the same rules, step for step (the steady-state skip aside, which
   only saves time), built by emu/amd/cu_native.py with the system's C compiler. cu_model.py is the reference: every rule here
   names the Python it mirrors, and tests/unit/amd/test_cu_native.py replays workloads both ways and compares every issue time.

   Inputs are arrays the Python side builds (cu_native.py; `check` keeps every index in range): per stream the instruction's
   row in the stream's table of distinct instructions, the table (`OpRow`), and its s_delay_alu dependencies as CSR arrays.
   Outputs: per wave its issue cycle per instruction (NONE: consumed without issue) and whether it waited on DRAM, its start,
   and the number of instructions it recorded. Returns 0, or a negative error code (nothing is then used). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;
#define NEVER (-1000000000LL)
#define NONE INT64_MIN
#define N_PORTS 7
#define MAX_WAITS 8
#define MAX_LINES (1LL << 24)   /* instruction-cache lines a CU's code may span here (1 GiB) */

enum { C_VALU, C_TRANS, C_SALU, C_BRANCH, C_SMEM, C_VMEM_LOAD, C_VMEM_STORE, C_LDS, C_DELAY, C_NOP, C_WAITCNT, C_BARRIER, C_END, C_OTHER };
enum { P_VALU, P_TRANS, P_MATRIX, P_SALU, P_SMEM, P_VMEM, P_LDS };
enum { VM = 0, VS = 1, N_COUNTERS = 5 };
enum { VALU_DEP = -1, TRANS_DEP = -2 };
/* ERR_UNSUPPORTED: what the Python replay takes and this one does not (cycles or waves beyond a heap key's fields, code over MAX_LINES) */
enum { ERR_MEMORY = -1, ERR_INPUT = -2, ERR_UNSUPPORTED = -3 };

/* one distinct instruction of a stream: cu_model.ROW (cu_native checks that the sizes agree) */
typedef struct {
  i64 pc;
  int32_t cost, lds_cycles, delay, size, first, last, plain;   /* first/last/enter: cache_spans; plain: its line when it lies in
                                                                  one and does not enter it, else -1 */
  int8_t cls, port, shared, vec, cond, via_trans, gated, own_port, enter, counter, n_waits;
  int8_t wait_counter[MAX_WAITS], wait_limit[MAX_WAITS];
} OpRow;

typedef struct { const int32_t *index; i64 n; const OpRow *table; i64 rows; const int32_t *dep_off; const i64 *dep_k; const i64 *dep_code;
                 i64 n_deps; } StreamIn;

/* cu_native.PARAM_FIELDS, in this order */
typedef struct { i64 simds, passes, wg_slots, fetch, valu_dep, trans_dep, vgpr_to_mem, smem_lat, vmem_load_lat, vmem_store_lat, store_next,
                 lds_lat, barrier_release, branch_dep, branch_taken, matrix_start, matrix_queue, matrix_drain, matrix_buffer; } Params;

/* the sizes of the structs the Python side lays out (cu_native checks them when it loads the library) */
void layout(i64 *out) { out[0] = sizeof(OpRow); out[1] = sizeof(StreamIn); out[2] = sizeof(Params); }

typedef struct { i64 t, global; } Access;   /* a counted operation: its completion, whether it was a global-memory access */
typedef struct { Access *a; i64 head, len, cap; } Pending;   /* a wait counter's operations, in order */

typedef struct {
  const StreamIn *st; i64 i, start, salu, last_valu, parked, mx_end, free_at; int simd, wg, next_dram;
  i64 *times; uint8_t *dram; Pending pend[N_COUNTERS];
} Wave;

/* room for `need` elements of `size` bytes in *a (capacity *cap, doubled as it grows) */
static int grow(void **a, i64 *cap, i64 need, size_t size) {
  if (need <= *cap) return 0;
  i64 c = *cap ? *cap : 8;
  while (c < need) c *= 2;
  void *b = realloc(*a, c * size);
  if (!b) return ERR_MEMORY;
  *a = b; *cap = c;
  return 0;
}

/* a heap item (cycle, wave, tag) as one key ordered like the tuple: tag 0 ready, 1 port wait, 2 + port: a wake */
typedef uint64_t Item;
#define WAVE_BITS 20
#define TAG_BITS 7
#define MAX_CYCLE (1LL << (64 - WAVE_BITS - TAG_BITS))
static Item item(i64 t, i64 wave, i64 tag) { return (uint64_t)t << (WAVE_BITS + TAG_BITS) | (uint64_t)wave << TAG_BITS | (uint64_t)tag; }
static i64 item_t(Item x) { return (i64)(x >> (WAVE_BITS + TAG_BITS)); }
static i64 item_wave(Item x) { return (i64)(x >> TAG_BITS & ((1 << WAVE_BITS) - 1)); }
static i64 item_tag(Item x) { return (i64)(x & ((1 << TAG_BITS) - 1)); }
typedef struct { uint64_t *a; i64 n, cap; } Heap;   /* a binary min-heap: of Items, or of the wave numbers parked at a port */

static int heap_add(Heap *h, uint64_t x) {
  if (grow((void **)&h->a, &h->cap, h->n + 1, sizeof(uint64_t))) return ERR_MEMORY;
  i64 k = h->n++;
  while (k > 0) { i64 up = (k - 1) / 2; if (x >= h->a[up]) break; h->a[k] = h->a[up]; k = up; }
  h->a[k] = x;
  return 0;
}

static uint64_t heap_pop(Heap *h) {   /* the least value (the heap is not empty) */
  uint64_t top = h->a[0], x = h->a[--h->n];
  i64 k = 0, n = h->n;
  for (;;) {
    i64 c = 2 * k + 1;
    if (c >= n) break;
    if (c + 1 < n && h->a[c + 1] < h->a[c]) c++;
    if (h->a[c] >= x) break;
    h->a[k] = h->a[c]; k = c;
  }
  if (n) h->a[k] = x;
  return top;
}

static int heap_push(Heap *h, i64 t, i64 wave, i64 tag) {   /* an item (cycle, wave, tag) */
  if (t < 0 || t >= MAX_CYCLE) return ERR_UNSUPPORTED;
  return heap_add(h, item(t, wave, tag));
}

static int pend_push(Pending *p, i64 t, int g) {
  if (grow((void **)&p->a, &p->cap, p->len + 1, sizeof(Access))) return ERR_MEMORY;
  p->a[p->len++] = (Access){t, g};
  return 0;
}

/* _Wave.wait: retire all but the newest `limit`; the last completion of those (NEVER if none) and whether one then was global */
static i64 pend_wait(Pending *p, i64 limit, int *global) {
  *global = 0;
  if (p->len - p->head <= limit) return NEVER;
  i64 stop = p->len - limit, t = NEVER;
  for (i64 k = p->head; k < stop; k++) if (p->a[k].t > t) t = p->a[k].t;
  for (i64 k = p->head; k < stop; k++) if (p->a[k].t == t && p->a[k].global) *global = 1;
  p->head = stop;
  return t;
}

/* _Matrix: a SIMD's matrix unit and the VALU work that waits on it (cu_model's docstring tells the rules). A wave's `free_at`
   lives in its Wave (a wave uses one SIMD's unit). */
typedef struct { i64 end, owner; } Flight;   /* a WMMA in flight: its completion and wave */
typedef struct { i64 wave, rest; } Pass;     /* VALU work waiting for completions: its wave, passes left */
typedef struct {
  Flight *fl; i64 n, cap;              /* in order */
  i64 *used; i64 n_used, cap_used;     /* completions an instruction issued at */
  Pass *pend; i64 head, n_pend, cap_pend;
  i64 undrained, drain_end, seen, pass_seen;
} Unit;

static int unit_used(const Unit *u, i64 t) { for (i64 k = 0; k < u->n_used; k++) if (u->used[k] == t) return 1; return 0; }

static int unit_use(Unit *u, i64 t) {   /* add `t` to the completions taken */
  if (unit_used(u, t)) return 0;
  if (grow((void **)&u->used, &u->cap_used, u->n_used + 1, sizeof(i64))) return ERR_MEMORY;
  u->used[u->n_used++] = t;
  return 0;
}

static void unit_advance(Unit *u, Wave *waves, i64 now) {   /* _Matrix.advance */
  for (i64 k = 0; k < u->n; k++) {
    i64 e = u->fl[k].end;
    if (e > now) break;
    if (e > u->seen) { u->drain_end = (u->drain_end > e ? u->drain_end : e) + u->undrained; u->undrained = 0; u->seen = e; }
    if (e < now && e > u->pass_seen) {
      u->pass_seen = e;
      if (!unit_used(u, e) && u->head < u->n_pend && --u->pend[u->head].rest == 0) waves[u->pend[u->head++].wave].free_at = e + 1;
    }
  }
  i64 k = 0;
  while (k < u->n && u->fl[k].end < now) k++;
  if (!k) return;
  if (k == u->n) {   /* idle: what was buffered or pending drains from the last completion */
    u->head = u->n_pend = 0;
    u->drain_end = (u->drain_end > u->seen ? u->drain_end : u->seen) + u->undrained; u->undrained = 0;
  }
  memmove(u->fl, u->fl + k, (u->n - k) * sizeof(Flight));
  u->n -= k;
  i64 keep = 0;
  for (i64 j = 0; j < u->n_used; j++) if (u->used[j] >= now) u->used[keep++] = u->used[j];
  u->n_used = keep;
}

static int others_in_flight(const Unit *u, i64 wave, i64 now) {
  for (i64 k = 0; k < u->n; k++) if (u->fl[k].end > now && u->fl[k].owner != wave) return 1;
  return 0;
}

static int pending(const Unit *u, i64 wave, int mine) {   /* _Matrix.waiting (mine) / held (another wave's work) */
  for (i64 k = u->head; k < u->n_pend; k++) if ((u->pend[k].wave == wave) == mine) return 1;
  return 0;
}

static i64 next_slot(const Unit *u) {
  for (i64 k = 0; k < u->n; k++) if (!unit_used(u, u->fl[k].end)) return u->fl[k].end;
  return u->fl[u->n - 1].end + 1;
}

/* _Matrix.gate: `ready` when the instruction may issue (with what unit_take then records in take[]: need, at_slot, follow;
   take[0] = -1: nothing), else the cycle to look again */
static i64 unit_gate(Unit *u, Wave *waves, i64 wave, const OpRow *op, i64 ready, i64 passes, i64 buffer, i64 *take) {
  take[0] = -1;
  if (u->n) unit_advance(u, waves, ready);
  if (op->port == P_MATRIX) {
    if (u->n && (others_in_flight(u, wave, ready) || pending(u, wave, 0))) { i64 slot = next_slot(u); if (slot > ready) return slot; }
    return ready;
  }
  if (!u->n || u->fl[u->n - 1].end <= ready) return u->drain_end - 1 > ready ? u->drain_end - 1 : ready;
  i64 need = op->cost * passes, room = NONE;   /* _Matrix.buffer_room; NONE: the owner's buffer takes none */
  if (u->undrained + need <= buffer && !others_in_flight(u, wave, ready) && !pending(u, wave, 0)) {
    room = u->drain_end - 1 - (buffer - need - u->undrained);
    if (room < ready) room = ready;
  }
  int at_slot = room == NONE || room > ready;
  if (at_slot && pending(u, wave, 1)) {   /* its previous work still waits: look again after the next completion */
    for (i64 k = 0; k < u->n; k++) if (u->fl[k].end >= ready) return u->fl[k].end + 1;
    return ready + 1;
  }
  int follow = at_slot && waves[wave].free_at == ready;
  if (at_slot && !follow) {
    i64 slot = next_slot(u);
    if (room != NONE && room < slot) slot = room;
    if (slot > ready) return slot;
  }
  int at_end = 0;   /* (a completion it issues at counts as one) */
  for (i64 k = 0; k < u->n; k++) if (u->fl[k].end == ready) at_end = 1;
  take[0] = need; take[1] = at_slot; take[2] = follow && !at_end;
  return ready;
}

static int unit_take(Unit *u, i64 wave, i64 now, const i64 *take) {   /* _Matrix.take */
  i64 need = take[0], at_slot = take[1], follow = take[2];
  if (at_slot) {
    if (!follow && unit_use(u, now)) return ERR_MEMORY;
    i64 rest = follow ? need : need - 1;
    if ((others_in_flight(u, wave, now) || pending(u, wave, 0)) && rest > 0) {
      if (grow((void **)&u->pend, &u->cap_pend, u->n_pend + 1, sizeof(Pass))) return ERR_MEMORY;
      u->pend[u->n_pend++] = (Pass){wave, rest};
    }
  }
  u->undrained += need;
  return 0;
}

static i64 unit_queue(Unit *u, i64 wave, i64 ready, i64 cycles, i64 start, int *err) {   /* _Matrix.queue: the WMMA's completion */
  if (grow((void **)&u->fl, &u->cap, u->n + 1, sizeof(Flight)) || unit_use(u, ready)) { *err = ERR_MEMORY; return 0; }
  i64 after = u->n ? u->fl[u->n - 1].end : 0, t = (ready + start > after ? ready + start : after) + cycles;
  u->fl[u->n++] = (Flight){t, wave};
  return t;
}

/* _ICache over the line numbers lo..lo+n-1 (`check` widens them to every line a stream names, its pair partner and successor) */
typedef struct { i64 *at; i64 lo, n, lat; } ICache;

static i64 *line_slot(ICache *c, i64 line) { i64 k = line - c->lo; return k >= 0 && k < c->n ? &c->at[k] : NULL; }

static i64 ic_request(ICache *c, i64 line, i64 done, int *err) {   /* _ICache.request */
  i64 *a = line_slot(c, line), *b = line_slot(c, line ^ 1);
  if (!a || !b) { *err = ERR_INPUT; return 0; }
  if (*a == NONE) *a = done;
  if (*b == NONE) *b = done;
  return *a;
}

static i64 ic_fetched(ICache *c, const OpRow *r, i64 ready, int *err) {   /* _ICache.fetched */
  i64 *f = line_slot(c, r->first), *l = line_slot(c, r->last), t;
  if (!f || !l) { *err = ERR_INPUT; return 0; }
  if (r->first == r->last) t = *f != NONE ? *f : ic_request(c, r->first, ready + c->lat, err);
  else {   /* (Python's `get(line) or request(...)`: a line present at cycle 0 also takes the request path) */
    i64 a = (*f != NONE && *f != 0) ? *f : ic_request(c, r->first, ready + c->lat, err);
    i64 b = (*l != NONE && *l != 0) ? *l : ic_request(c, r->last, ready + c->lat, err);
    t = a > b ? a : b;
  }
  if (t <= ready && r->enter) {
    i64 *nx = line_slot(c, r->first + 1);
    if (!nx) { *err = ERR_INPUT; return 0; }
    if (*nx == NONE) ic_request(c, r->first + 1, ready + c->lat, err);
  }
  return t;
}

typedef struct {
  const Params *p; Wave *waves; i64 n_waves; Heap heap; ICache ic; i64 free[N_PORTS * 9]; i64 shared_base;
  int matrix; Unit units[8];   /* each SIMD's matrix unit, when a stream has a matrix op (else the ports alone decide) */
  /* a port's waiting waves and its wake item (0: none). cu_model pushes a new wake item whenever one changes and skips the
     stale ones it pops; here each port's one live item stays out of the heap and the loop takes it when it is the least */
  Heap parked[N_PORTS * 9]; Item wake[N_PORTS * 9]; uint64_t live; i64 lds_done;
  /* _Workgroups: waves of workgroup g are wg_first[g] .. wg_first[g + 1] - 1 (wave numbers wg_wave[...]) */
  i64 n_wg, launched, clock; i64 *wg_first; int32_t *wg_wave; i64 *remaining; int32_t *arrived; i64 *n_arrived;
} CU;

static int cu_launch(CU *cu, i64 at) {   /* _CU.launch / _Workgroups.next_launch */
  if (cu->launched >= cu->n_wg) return 0;
  i64 wg = cu->launched++, t = at > cu->clock ? at : cu->clock, first = cu->wg_first[wg], count = cu->wg_first[wg + 1] - first;
  cu->clock = t + count;   /* LAUNCH_GAP 1 */
  for (i64 k = 0; k < count; k++) {
    Wave *w = &cu->waves[cu->wg_wave[first + k]];
    w->start = t + k; w->i = 0; w->simd = (int)(k % cu->p->simds); w->wg = (int)wg; w->mx_end = NEVER; w->free_at = NONE;
    w->salu = NEVER; w->last_valu = NEVER; w->parked = 0; w->next_dram = 1;
    i64 ready = w->start + cu->p->fetch;
    for (i64 line = 0; line < 4; line++) {   /* ILAUNCH_LINES */
      i64 *s = line_slot(&cu->ic, line);
      if (!s) return ERR_INPUT;
      if (*s == NONE) *s = ready;
    }
    int e = heap_push(&cu->heap, ready, cu->wg_wave[first + k], 0);
    if (e) return e;
  }
  return 0;
}

/* _Workgroups._released + _CU.release: when every running wave of `wg` has arrived, push the waiters (arrival order) */
static int cu_release_if_all(CU *cu, i64 wg, i64 last) {
  if (cu->n_arrived[wg] == 0 || cu->n_arrived[wg] != cu->remaining[wg]) return 0;
  i64 first = cu->wg_first[wg], n = cu->n_arrived[wg];
  cu->n_arrived[wg] = 0;
  for (i64 k = 0; k < n; k++) {
    i64 j = cu->arrived[first + k], t = last + cu->p->barrier_release;
    if (cu->waves[j].parked > t) t = cu->waves[j].parked;
    int e = heap_push(&cu->heap, t, j, 0);
    if (e) return e;
  }
  return 0;
}

/* _Ports.take: `ready` when issued, else the cycle the ports are free */
static i64 ports_take(CU *cu, int simd, const OpRow *op, i64 ready, i64 mult) {
  i64 *free = cu->free, base = simd * N_PORTS, key = op->port + (op->shared ? cu->shared_base : base), busy = free[key];
  if (op->port == P_TRANS && free[base + P_VALU] > busy) busy = free[base + P_VALU];
  if (op->via_trans && free[base + P_TRANS] > busy) busy = free[base + P_TRANS];
  if (busy > ready) return busy;
  free[key] = ready + op->cost * mult;
  if (op->port == P_TRANS) free[base + P_VALU] = ready + mult;
  else if (op->via_trans) free[base + P_TRANS] = ready + mult;
  return ready;
}

static int wake_set(CU *cu, i64 key, i64 t) {   /* a port's wake item: for its lowest-numbered waiting wave at `t` */
  if (t < 0 || t >= MAX_CYCLE) return ERR_UNSUPPORTED;
  cu->wake[key] = item(t, cu->parked[key].a[0], 2 + key);
  cu->live |= 1ULL << key;
  return 0;
}

static Item next_item(CU *cu) {   /* the least of the heap's top and the live wake items, taken (one of them exists) */
  Item least = UINT64_MAX;
  int key = -1;
  for (uint64_t m = cu->live; m; m &= m - 1) { int k = __builtin_ctzll(m); if (cu->wake[k] < least) { least = cu->wake[k]; key = k; } }
  if (key < 0 || (cu->heap.n && cu->heap.a[0] < least)) return heap_pop(&cu->heap);
  cu->live &= ~(1ULL << key);
  return least;
}

static int run(CU *cu) {   /* _CU.run */
  const Params *p = cu->p;
  int err = 0;
  while (cu->heap.n || cu->live) {
    Item top = next_item(cu);
    i64 ready = item_t(top), i = item_wave(top), tag = item_tag(top);
    int port_wait;
    if (tag > 1) {
      i64 key = tag - 2;
      if (!cu->parked[key].n) return ERR_INPUT;
      heap_pop(&cu->parked[key]);
      port_wait = 1;
    } else port_wait = (int)tag;
    Wave *w = &cu->waves[i];
    const StreamIn *st = w->st;
    i64 wi = w->i;
    const OpRow *op = &st->table[st->index[wi]];
    if (!port_wait) {
      i64 t = ic_fetched(&cu->ic, op, ready, &err);
      if (err) return err;
      if (t > ready) { w->next_dram = 1; if ((err = heap_push(&cu->heap, t, i, 0))) return err; continue; }
    }
    i64 mult = op->vec ? p->passes : 1;
    if (cu->matrix && op->vec) {   /* _CU.issue_port with matrix units */
      Unit *u = &cu->units[w->simd];
      i64 take[3], t = unit_gate(u, cu->waves, i, op, ready, p->passes, p->matrix_buffer, take);
      if (t > ready) { if ((err = heap_push(&cu->heap, t, i, 1))) return err; continue; }
      if (op->port == P_MATRIX) {   /* the issue takes one VALU pass; the op queues behind the SIMD's WMMAs in flight */
        i64 key = w->simd * N_PORTS + P_VALU;
        if (cu->free[key] > ready) { if ((err = heap_push(&cu->heap, cu->free[key], i, 1))) return err; continue; }
        cu->free[key] = ready + mult;
        w->mx_end = unit_queue(u, i, ready, op->cost * mult, p->matrix_start, &err);
        if (err) return err;
      } else {
        if ((t = ports_take(cu, w->simd, op, ready, mult)) > ready) { if ((err = heap_push(&cu->heap, t, i, 1))) return err; continue; }
        if (take[0] >= 0 && (err = unit_take(u, i, ready, take))) return err;
      }
    } else if (op->own_port && !cu->matrix) {
      i64 key = w->simd * N_PORTS + op->port, t = cu->free[key];
      if (t > ready) {
        if ((err = heap_add(&cu->parked[key], (uint64_t)i)) || (err = wake_set(cu, key, t))) return err;
        continue;
      }
      cu->free[key] = t = ready + op->cost * mult;
      if (cu->parked[key].n && (err = wake_set(cu, key, t))) return err;
    } else if (op->port >= 0) {
      i64 t = ports_take(cu, w->simd, op, ready, mult);
      if (t > ready) { if ((err = heap_push(&cu->heap, t, i, 1))) return err; continue; }
    }
    /* the issue */
    w->times[wi] = ready; w->dram[wi] = (uint8_t)w->next_dram;
    w->i = ++wi;
    i64 cls = op->cls, nxt = ready + 1;
    if (cls <= C_TRANS) {
      w->last_valu = ready; nxt = ready + p->passes;
      if (op->port == P_MATRIX) {   /* _CU.matrix_hold: with the queue full, until the oldest WMMA beyond its size completes */
        const Unit *u = &cu->units[w->simd];
        i64 out = 0;
        for (i64 k = 0; k < u->n; k++) out += u->fl[k].end > ready;
        if (u->n >= p->matrix_queue && out >= p->matrix_queue) {
          i64 seen = 0;
          for (i64 k = 0; k < u->n; k++) if (u->fl[k].end > ready && seen++ == out - p->matrix_queue && u->fl[k].end > nxt) nxt = u->fl[k].end;
        }
      }
    }
    else if (cls == C_SALU) w->salu = ready;
    else if (cls == C_BRANCH) {   /* _CU.effects from here on */
      w->salu = ready;
      if (wi < st->n && st->table[st->index[wi]].pc != op->pc + op->size) nxt = ready + p->branch_taken;
    } else if (cls == C_SMEM) err = pend_push(&w->pend[op->counter], ready + p->smem_lat, 1);
    else if (cls == C_VMEM_LOAD) err = pend_push(&w->pend[VM], ready + p->vmem_load_lat, 1);
    else if (cls == C_VMEM_STORE) { err = pend_push(&w->pend[VS], ready + p->vmem_store_lat, 1); nxt = ready + p->store_next; }
    else if (cls == C_LDS) {
      i64 a = ready + p->lds_lat, b = cu->lds_done + op->lds_cycles;
      cu->lds_done = a > b ? a : b;
      err = pend_push(&w->pend[op->counter], cu->lds_done, 0);
    } else if (cls == C_DELAY) { w->times[wi - 1] = NONE; nxt = ready; }
    else if (cls == C_NOP) nxt = ready + op->delay;
    if (err) return err;
    if (cls == C_END || wi >= st->n) {   /* _CU.end_wave */
      i64 wg = w->wg;
      cu->remaining[wg]--;
      if ((err = cu_release_if_all(cu, wg, ready))) return err;
      if (cu->remaining[wg] == 0 && (err = cu_launch(cu, ready))) return err;
      continue;
    }
    const OpRow *nop = &st->table[st->index[wi]];
    /* an s_delay_alu next whose line is in the cache by nxt: consumed here */
    while (nop->cls == C_DELAY && wi + 1 < st->n && nop->plain >= 0) {
      i64 *s = line_slot(&cu->ic, nop->plain);
      if (!s) return ERR_INPUT;
      if (*s == NONE || *s > nxt) break;
      w->times[wi] = NONE; w->dram[wi] = 0;
      w->i = ++wi;
      nop = &st->table[st->index[wi]];
    }
    for (i64 d = st->dep_off[wi]; d < st->dep_off[wi + 1]; d++) {   /* s_delay_alu dependencies */
      i64 k = st->dep_k[d], code = st->dep_code[d];
      if (k < 0 || k >= wi || w->times[k] == NONE) return ERR_INPUT;
      i64 t = w->times[k] + (code == VALU_DEP ? p->valu_dep : code == TRANS_DEP ? p->trans_dep : code);
      if (t > nxt) nxt = t;
    }
    int dram = 0;
    if (nop->gated) {   /* _CU.readiness */
      if (nop->port >= P_VMEM) { if (w->last_valu + p->vgpr_to_mem > nxt) nxt = w->last_valu + p->vgpr_to_mem; }
      else if (nop->cond && w->salu + p->branch_dep > nxt) nxt = w->salu + p->branch_dep;
      if (nop->cls == C_WAITCNT) {
        for (i64 q = 0; q < nop->n_waits; q++) {
          int g;
          i64 t = pend_wait(&w->pend[nop->wait_counter[q]], nop->wait_limit[q], &g);
          if (t > nxt) { nxt = t; dram = dram || g; }
        }
      } else if (nop->cls == C_END) {
        i64 t = NONE;
        for (int c = VM; c <= VS; c++) for (i64 k = w->pend[c].head; k < w->pend[c].len; k++) if (w->pend[c].a[k].t > t) t = w->pend[c].a[k].t;
        if (t != NONE && t > nxt) { nxt = t; dram = 1; }
        if (w->mx_end + p->matrix_drain > nxt) nxt = w->mx_end + p->matrix_drain;
      }
    }
    w->next_dram = dram;
    if (cls == C_BARRIER) {   /* _Workgroups.arrive */
      w->parked = nxt;
      i64 wg = w->wg;
      cu->arrived[cu->wg_first[wg] + cu->n_arrived[wg]++] = (int32_t)i;
      if ((err = cu_release_if_all(cu, wg, ready))) return err;
      continue;
    }
    if ((err = heap_push(&cu->heap, nxt, i, 0))) return err;
  }
  return 0;
}

/* 0 when every index and code of the stream is in range (bad input is an error code, never a wild access), widening lo..hi to
   every instruction-cache line a fetch can name: a span's lines, the next line, their 128-byte pair partners */
static int check(const StreamIn *st, i64 *lo, i64 *hi, int *matrix) {
  if (st->n < 1 || st->rows < 1) return ERR_INPUT;
  for (i64 r = 0; r < st->rows; r++) {
    const OpRow *o = &st->table[r];
    if (o->cls < 0 || o->cls > C_OTHER || o->port < -1 || o->port >= N_PORTS || o->counter < -1 || o->counter >= N_COUNTERS ||
        ((o->cls == C_SMEM || o->cls == C_LDS) && o->counter < 0) || o->n_waits < 0 || o->n_waits > MAX_WAITS) return ERR_INPUT;
    for (int q = 0; q < o->n_waits; q++) if (o->wait_counter[q] < 0 || o->wait_counter[q] >= N_COUNTERS) return ERR_INPUT;
    if (o->port == P_MATRIX) *matrix = 1;
    i64 lines[6] = {o->first, o->first ^ 1, o->last, o->last ^ 1, o->first + 1, (o->first + 1) ^ 1};
    for (int k = 0; k < 6; k++) { if (lines[k] < *lo) *lo = lines[k]; if (lines[k] > *hi) *hi = lines[k]; }
  }
  if (st->dep_off[0] != 0 || st->dep_off[st->n] > st->n_deps) return ERR_INPUT;
  for (i64 k = 0; k < st->n; k++) if (st->index[k] < 0 || st->index[k] >= st->rows || st->dep_off[k + 1] < st->dep_off[k]) return ERR_INPUT;
  return 0;
}

/* Replay one CU. streams[s]; wave k runs streams[wave_stream[k]] in local workgroup wg_of[k] (>= 0), recording into
   times[at[k]...] / dram[at[k]...] (room for its stream's length). out[k]: instructions the wave recorded; start[k]: its start
   cycle. */
i64 cu_replay(const StreamIn *streams, i64 n_streams, i64 n_waves, const int32_t *wave_stream, const int32_t *wg_of, const Params *p,
              const i64 *at, i64 *times, uint8_t *dram, i64 *out, i64 *start) {
  if (p->simds < 1 || p->simds > 8 || n_waves < 1) return ERR_INPUT;
  if (n_waves >= 1 << WAVE_BITS) return ERR_UNSUPPORTED;
  i64 lo = 0, hi = 3, err = 0;   /* (the launch fetches lines 0-3) */
  int matrix = 0;
  for (i64 k = 0; k < n_streams; k++) if ((err = check(&streams[k], &lo, &hi, &matrix))) return err;
  if (hi - lo >= MAX_LINES) return ERR_UNSUPPORTED;
  CU cu;
  memset(&cu, 0, sizeof cu);
  cu.p = p; cu.n_waves = n_waves; cu.shared_base = p->simds * N_PORTS; cu.lds_done = NEVER; cu.matrix = matrix;
  for (int k = 0; k < 8; k++) { cu.units[k].seen = cu.units[k].pass_seen = -1; }
  for (i64 k = 0; k < n_waves; k++) {
    if (wg_of[k] < 0) return ERR_INPUT;
    if (wg_of[k] >= n_waves) return ERR_UNSUPPORTED;   /* (workgroups no wave is in) */
    if (wg_of[k] >= cu.n_wg) cu.n_wg = wg_of[k] + 1;
  }
  cu.waves = calloc(n_waves, sizeof(Wave));
  cu.ic.n = hi - lo + 1; cu.ic.lo = lo; cu.ic.lat = p->fetch; cu.ic.at = malloc(cu.ic.n * sizeof(i64));
  cu.wg_first = calloc(cu.n_wg + 1, sizeof(i64)); cu.remaining = calloc(cu.n_wg, sizeof(i64)); cu.n_arrived = calloc(cu.n_wg, sizeof(i64));
  cu.wg_wave = malloc(n_waves * sizeof(int32_t)); cu.arrived = malloc(n_waves * sizeof(int32_t));
  if (!cu.waves || !cu.ic.at || !cu.wg_first || !cu.remaining || !cu.n_arrived || !cu.wg_wave || !cu.arrived) { err = ERR_MEMORY; goto done; }
  for (i64 k = 0; k < cu.ic.n; k++) cu.ic.at[k] = NONE;
  for (i64 k = 0; k < n_waves; k++) {
    if (wave_stream[k] < 0 || wave_stream[k] >= n_streams) { err = ERR_INPUT; goto done; }
    cu.waves[k].st = &streams[wave_stream[k]]; if (at[k + 1] - at[k] < streams[wave_stream[k]].n) { err = ERR_INPUT; goto done; }
    cu.waves[k].times = times + at[k]; cu.waves[k].dram = dram + at[k];
    cu.remaining[wg_of[k]]++; cu.wg_first[wg_of[k] + 1]++;
  }
  for (i64 g = 0; g < cu.n_wg; g++) cu.wg_first[g + 1] += cu.wg_first[g];
  for (i64 k = 0; k < n_waves; k++) cu.wg_wave[cu.wg_first[wg_of[k]] + cu.n_arrived[wg_of[k]]++] = (int32_t)k;   /* by workgroup, in order */
  memset(cu.n_arrived, 0, cu.n_wg * sizeof(i64));
  i64 slots = p->wg_slots < 1 ? 1 : p->wg_slots;
  for (i64 g = 0; g < (cu.n_wg < slots ? cu.n_wg : slots); g++) if ((err = cu_launch(&cu, 0))) goto done;
  err = run(&cu);
  for (i64 k = 0; k < n_waves; k++) { out[k] = cu.waves[k].i; start[k] = cu.waves[k].start; }
done:
  if (cu.waves) for (i64 k = 0; k < n_waves; k++) for (int c = 0; c < N_COUNTERS; c++) free(cu.waves[k].pend[c].a);
  for (int k = 0; k < N_PORTS * 9; k++) free(cu.parked[k].a);
  for (int k = 0; k < 8; k++) { free(cu.units[k].fl); free(cu.units[k].used); free(cu.units[k].pend); }
  free(cu.heap.a); free(cu.waves); free(cu.ic.at); free(cu.wg_first); free(cu.remaining); free(cu.n_arrived); free(cu.wg_wave); free(cu.arrived);
  return err;
}
