/* Freestanding x86-64 Linux program that calls flat machine code for fuzz/x86_qemu.py. It runs under qemu-x86_64, never natively.
 *
 * No libc: raw syscalls only. At start it reserves an arena (PROT_NONE) and writes a hello: magic, arena base, arena size.
 * Each request on stdin (little-endian u64 words):
 *   nregions, nargs, then per region: addr, len, flags (1 = code: mapped read+exec, 2 = send back), then its len bytes,
 *   then nargs argument words.
 * The regions are mapped at their addresses inside the arena (everything else there stays PROT_NONE: guard pages), the
 * function at the first code region is called with the System V ABI (6 register arguments, the rest on the stack), and
 * the reply is: status 0, the callee-saved registers rbx rbp r12 r13 r14 r15 and the rsp drift as the callee left them,
 * then the bytes of every send-back region.
 * A SIGSEGV/SIGILL/SIGFPE/SIGBUS/SIGTRAP replies status 1, signal number, fault address, rip, and exits; a malformed
 * request replies status 2 and exits. The caller restarts the program after either.
 */
typedef unsigned long u64;
typedef long i64;

#define ARENA_SIZE (1ul << 30)
#define MAX_N 64  /* most regions, and most argument words, in one request */
#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
#define MAP_PRIVATE 0x02
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20
#define MAP_NORESERVE 0x4000
#define SA_SIGINFO 0x4
#define SA_ONSTACK 0x08000000
#define SA_RESTORER 0x04000000
#define PAGE 4096ul
#define MAGIC 0x3638784d4755454dul /* "MEUGMx86" */

static i64 sys6(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e, i64 f) {
  register i64 r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
  i64 ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return ret;
}
static i64 sys3(i64 n, i64 a, i64 b, i64 c) { return sys6(n, a, b, c, 0, 0, 0); }
static __attribute__((noreturn)) void die(int code) { for (;;) sys3(231, code, 0, 0); }

static void write_all(const void *p, u64 n) {
  for (const char *c = p; n;) {
    i64 k = sys3(1, 1, (i64)c, (i64)n);
    if (k <= 0) die(4);
    c += k; n -= (u64)k;
  }
}
static int read_all(void *p, u64 n, int may_end) {  /* 0 on end of input before the first byte if may_end, else dies */
  char *c = p;
  for (u64 got = 0; got < n;) {
    i64 k = sys3(0, 0, (i64)(c + got), (i64)(n - got));
    if (k == 0 && got == 0 && may_end) return 0;
    if (k <= 0) die(5);
    got += (u64)k;
  }
  return 1;
}
static u64 span(u64 n) { return n ? (n + PAGE - 1) & ~(PAGE - 1) : PAGE; }  /* whole pages, at least one */
static i64 map_at(u64 addr, u64 len, int prot) {
  return sys6(9, (i64)addr, (i64)len, prot, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

/* tg_call(fn, args, n, out): args has n >= 6 words; out gets rbx rbp r12 r13 r14 r15 after the call and the rsp drift. */
void tg_call(u64 fn, const u64 *args, u64 n, u64 *out);
__asm__(
  ".text\n.globl tg_call\ntg_call:\n"
  "  push %rbp\n  push %rbx\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n  push %rcx\n"
  "  mov %rsp, saved_rsp(%rip)\n"
  "  mov %rdi, %rax\n  mov %rsi, %r10\n  mov %rdx, %r11\n"
  "  test $1, %r11\n  jz 1f\n  sub $8, %rsp\n"          /* an odd number of stack words keeps rsp 16-byte aligned */
  "1:cmp $6, %r11\n  jbe 2f\n  push -8(%r10,%r11,8)\n  dec %r11\n  jmp 1b\n"
  "2:mov %rsp, expect_rsp(%rip)\n"
  "  mov (%r10), %rdi\n  mov 8(%r10), %rsi\n  mov 16(%r10), %rdx\n  mov 24(%r10), %rcx\n  mov 32(%r10), %r8\n  mov 40(%r10), %r9\n"
  "  movabs $0x5a5a00000000a5b1, %rbx\n  movabs $0x5a5a00000000a5b2, %rbp\n  movabs $0x5a5a00000000a5b3, %r12\n"
  "  movabs $0x5a5a00000000a5b4, %r13\n  movabs $0x5a5a00000000a5b5, %r14\n  movabs $0x5a5a00000000a5b6, %r15\n"
  "  vzeroall\n  cld\n  ldmxcsr mxcsr_default(%rip)\n"
  "  call *%rax\n"
  "  mov %rsp, %rsi\n  sub expect_rsp(%rip), %rsi\n"
  "  mov saved_rsp(%rip), %rsp\n  mov (%rsp), %rcx\n"
  "  mov %rbx, (%rcx)\n  mov %rbp, 8(%rcx)\n  mov %r12, 16(%rcx)\n  mov %r13, 24(%rcx)\n  mov %r14, 32(%rcx)\n  mov %r15, 40(%rcx)\n"
  "  mov %rsi, 48(%rcx)\n"
  "  pop %rcx\n  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbx\n  pop %rbp\n  ret\n"
  ".globl tg_restorer\ntg_restorer:\n  mov $15, %eax\n  syscall\n"
  ".globl _start\n_start:\n  xor %ebp, %ebp\n  and $-16, %rsp\n  call harness_main\n  hlt\n"
  ".bss\n.p2align 3\nsaved_rsp: .zero 8\nexpect_rsp: .zero 8\n"
  ".section .rodata\nmxcsr_default: .long 0x1f80\n.text\n");  /* mxcsr: round to nearest, all exceptions masked */
void tg_restorer(void);

static void on_signal(int sig, void *info, void *uc) {
  u64 rep[4] = {1, (u64)sig, *(u64 *)((char *)info + 16), *(u64 *)((char *)uc + 168)};  /* siginfo.si_addr, mcontext rip */
  write_all(rep, sizeof rep);
  die(3);
}

static char altstack[1 << 16];

__attribute__((noreturn, used)) void harness_main(void) {
  static const int sigs[] = {4, 5, 7, 8, 11};  /* SIGILL SIGTRAP SIGBUS SIGFPE SIGSEGV */
  u64 act[4] = {(u64)on_signal, SA_SIGINFO | SA_ONSTACK | SA_RESTORER, (u64)tg_restorer, 0};
  u64 ss[3] = {(u64)altstack, 0, sizeof altstack};
  sys3(131, (i64)ss, 0, 0);
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sys6(13, sigs[i], (i64)act, 0, 8, 0, 0);
  i64 arena = sys6(9, 0, ARENA_SIZE, 0, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena < 0) die(6);
  u64 hello[3] = {MAGIC, (u64)arena, ARENA_SIZE}, used = 0;
  write_all(hello, sizeof hello);
  static u64 regs[MAX_N][3], args[MAX_N];
  for (;;) {
    u64 hdr[2], fn = 0;
    if (!read_all(hdr, sizeof hdr, 1)) die(0);
    int bad = hdr[0] > MAX_N || hdr[1] > MAX_N;
    if (used && map_at((u64)arena, used, 0) < 0) die(6);  /* back to guard pages only */
    used = 0;
    for (u64 i = 0; !bad && i < hdr[0]; i++) {
      u64 *r = regs[i];
      read_all(r, 3 * sizeof(u64), 0);
      u64 end = r[0] + span(r[1]);
      bad = r[0] % PAGE || r[0] < (u64)arena || end < r[0] || end > (u64)arena + ARENA_SIZE
            || map_at(r[0], span(r[1]), PROT_READ | PROT_WRITE) < 0;
      if (bad) break;
      read_all((void *)r[0], r[1], 0);
      if (end - (u64)arena > used) used = end - (u64)arena;
      if (r[2] & 1) {
        bad = sys3(10, (i64)r[0], (i64)span(r[1]), PROT_READ | PROT_EXEC) < 0;
        if (!fn) fn = r[0];
      }
    }
    if (bad || !fn) {
      u64 rep[4] = {2, hdr[0], hdr[1], 0};
      write_all(rep, sizeof rep);
      die(2);
    }
    read_all(args, hdr[1] * sizeof(u64), 0);
    for (u64 i = hdr[1]; i < 6; i++) args[i] = 0;
    u64 rep[8] = {0};
    tg_call(fn, args, hdr[1] < 6 ? 6 : hdr[1], rep + 1);
    write_all(rep, sizeof rep);
    for (u64 i = 0; i < hdr[0]; i++) if (regs[i][2] & 2) write_all((void *)regs[i][0], regs[i][1]);
  }
}
