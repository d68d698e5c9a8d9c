/* xlat_record: a Valgrind tool that streams a program's memory references to xlat.
 *
 * `xlat trace record` compiles this file against the installed Valgrind's static libraries
 * and runs it as `valgrind --tool=xlatrec`. Every load and store (and, with
 * --xlat-ifetch=yes, every instruction fetch) calls one helper that appends a 16-byte
 * binary record to a buffer; full buffers are written to the file descriptor given by
 * --xlat-fd (a pipe read by xlat, which encodes the native trace format). Text output
 * (Lackey) costs a formatted line per reference; binary records cost a store. The
 * program's address-space changes (mmap, munmap, mremap, brk, shmat, shmdt) go into the
 * same stream as events, after the mappings that existed when recording began.
 *
 * Record (little-endian, 16 bytes): addr u64, instrs u32, size u16, kind u8, sub u8.
 *   kind 0 load, 1 store, 2 instruction fetch: `instrs` guest instructions began since the
 *     previous reference (the reference's own instruction included, so with fetches
 *     recorded each fetch carries 1 and data references 0).
 *   kind 3 control, `sub` says which:
 *     0 CARRY  addr instructions to add to the next reference (counts beyond 32 bits)
 *     1 END    the program exited; addr = instructions it executed in all
 *     2 EXEC   the program is calling execve, which ends recording; addr as for END
 *     3 LIMIT  --xlat-limit references were recorded; addr as for END
 *     4 START  the --xlat-start-at point was reached: addr = references the program made
 *              before it (a SKIPPED record follows)
 *     5 SKIPPED addr = instructions the program executed before the start point
 *     6 STOP   the --xlat-stop-at point was reached; addr as for END
 *   kind 4 address-space event, `sub` says which (xlat's RangeOp): 0 MAP, 1 UNMAP of the
 *     pages from addr (page-aligned); `instrs` holds the low 32 bits of the page count and
 *     `size` the high 16 (ranges up to 2^60 bytes, beyond any x86-64 address space).
 *     Events sit between the references before and after them; they carry no instructions
 *     (those go on the next reference).
 * The Rust side (crates/xlat-cli/src/record/stream.rs) must agree with this layout. No
 * version is exchanged: xlat compiles this source into a cache keyed by its hash and runs
 * the tool it built, so both sides always come from the same xlat.
 */

#include "pub_tool_basics.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vkiscnums.h"

/* Not in the tool headers, but exported by the core (it serves --log-fd the same way):
   moves an fd above the client's descriptor limit and marks it close-on-exec, so the
   client can neither close nor overwrite our pipe, nor leak it to programs it runs. */
extern Int VG_(safe_fd)(Int oldfd);
/* Also core-only: the client's auxiliary vector, on its initial stack. */
extern UWord* VG_(client_auxv);
/* Also core-only: the client's program break, which Valgrind emulates (brk never reaches
   the kernel): where the heap begins, and where it ends now. */
extern Addr VG_(brk_base);
extern Addr VG_(brk_limit);

/* Auxiliary vector entries: end, and the address of 16 random bytes from the kernel. */
#define AUX_NULL 0
#define AUX_RANDOM 25

#define KIND_LOAD 0
#define KIND_STORE 1
#define KIND_FETCH 2
#define KIND_CONTROL 3
#define SUB_CARRY 0
#define SUB_END 1
#define SUB_EXEC 2
#define SUB_LIMIT 3
#define SUB_START 4
#define SUB_SKIPPED 5
#define SUB_STOP 6
#define KIND_EVENT 4
#define EVENT_MAP 0
#define EVENT_UNMAP 1

/* The helper's second argument packs what is known when translating: kind (2 bits),
   size (16 bits) and the instructions begun since the previous reference in this
   superblock (the rest). */
#define INFO_SIZE_SHIFT 2
#define INFO_COUNT_SHIFT 18

typedef struct {
   ULong addr;
   UInt instrs;
   UShort size;
   UChar kind;
   UChar sub;
} Record;

/* 8192 records = 128 KiB per write: few system calls, and well inside a pipe's reach. */
#define BUF_RECORDS 8192

static Record buf[BUF_RECORDS];
static Int buf_used;

static Long clo_fd = -1;
static Bool clo_ifetch = False;
static Long clo_skip = 0;
static Long clo_limit = 0; /* 0: no limit */
/* Recording starts at the clo_start_count-th entry of function clo_start_at (and --xlat-skip
   counts from there), and stops at the clo_stop_count-th entry of clo_stop_at (counted from
   the program's start) if it comes after the start. */
static const HChar* clo_start_at = NULL;
static Long clo_start_count = 1;
static const HChar* clo_stop_at = NULL;
static Long clo_stop_count = 1;

static Int out_fd = -1;
/* False once the limit is reached, after a fork (in the child) or an execve. */
static Bool recording = True;
/* Instructions begun since the last reference; superblocks add to it inline at exits. */
static ULong pending;
/* Instructions up to and including the last reference's. */
static ULong counted;
/* References seen since the start point, skipped ones included. */
static ULong seen;
/* False until the start point is reached (always True without --xlat-start-at). */
static Bool started = True;
/* References before the start point. */
static ULong before_start;
/* Entries of the start and stop functions so far. */
static ULong start_entries, stop_entries;
/* True once the address space as it stood at the first recorded reference has been sent;
   events come only after it (earlier ones are part of what it shows). */
static Bool mappings_sent;
/* The program break before the brk call in progress. */
static Addr brk_before;
/* The extent of the shared-memory segment that the shmdt in progress detaches (0: none). */
static SizeT shmdt_len;

/* Writes `n` bytes, retrying short writes. If xlat has gone away there is nobody to
   report to: recording stops and the program runs on. */
static void write_all(const UChar* p, Int n)
{
   while (n > 0 && out_fd >= 0) {
      Int w = VG_(write)(out_fd, p, n);
      if (w <= 0) {
         VG_(close)(out_fd);
         out_fd = -1;
         recording = False;
         return;
      }
      p += w;
      n -= w;
   }
}

static void flush(void)
{
   write_all((const UChar*)buf, buf_used * (Int)sizeof(Record));
   buf_used = 0;
}

static void push(ULong addr, ULong instrs, UInt size, UInt kind, UInt sub)
{
   if (instrs > 0xFFFFFFFFULL) {
      push(instrs, 0, 0, KIND_CONTROL, SUB_CARRY);
      instrs = 0;
   }
   Record* r = &buf[buf_used++];
   r->addr = addr;
   r->instrs = (UInt)instrs;
   r->size = (UShort)size;
   r->kind = (UChar)kind;
   r->sub = (UChar)sub;
   if (buf_used == BUF_RECORDS)
      flush();
}

/* Ends recording with a control record carrying the instruction total. */
static void stop(UInt sub)
{
   if (!recording)
      return;
   recording = False;
   push(counted + pending, 0, 0, KIND_CONTROL, sub);
   flush();
}

/* Sends an address-space event for the pages that `len` bytes from `start` touch, once
   recording has begun (before, the mappings sent at its start show the event's outcome). */
static void push_event(UInt op, Addr start, SizeT len)
{
   if (!recording || !mappings_sent || len == 0)
      return;
   Addr first = VG_ROUNDDN(start, VKI_PAGE_SIZE);
   ULong pages = (VG_PGROUNDUP(start + len) - first) >> VKI_PAGE_SHIFT;
   push(first, pages & 0xFFFFFFFFULL, (UInt)(pages >> 32), KIND_EVENT, op);
}

/* Sends the client's mappings (the program, the loader, libraries, the stack, mappings made
   while references were skipped) as MAP events, so that a simulation knows the whole
   address space from the first recorded reference on. Two differ from Valgrind's segments:
   - the heap is sent as the break delimits it: Valgrind maps a page at its base before the
     first brk, and does not unmap what a shrinking brk releases;
   - the main thread's stack is sent as all it may grow to: Valgrind grows it on faults, as
     Linux does, with no system call to report, so the touches of its new pages must fall
     inside a mapping already sent. */
static void send_mappings(void)
{
   UInt kinds = SkFileC | SkAnonC | SkShmC;
   static Addr few[64];
   Addr* starts = few;
   Int n = VG_(am_get_segment_starts)(kinds, starts, 64);
   /* A negative count is the room needed; it may change as the buffer is allocated (so the
      header says), hence the loop. */
   while (n < 0) {
      if (starts != few)
         VG_(free)(starts);
      starts = VG_(malloc)("xlat.segments", -n * sizeof(Addr));
      n = VG_(am_get_segment_starts)(kinds, starts, -n);
   }
   mappings_sent = True;
   /* Thread 1 is the main thread; its stack size is the most it may grow to. */
   Addr stack_top = VG_(thread_get_stack_max)(1) + 1;
   Addr stack_bottom = stack_top - VG_(thread_get_stack_size)(1);
   for (Int i = 0; i < n; i++) {
      NSegment const* seg = VG_(am_find_nsegment)(starts[i]);
      if (!seg || seg->start == VG_(brk_base) || (seg->start >= stack_bottom && seg->end < stack_top))
         continue;
      push_event(EVENT_MAP, seg->start, seg->end - seg->start + 1);
   }
   if (starts != few)
      VG_(free)(starts);
   push_event(EVENT_MAP, VG_(brk_base), VG_(brk_limit) - VG_(brk_base));
   push_event(EVENT_MAP, stack_bottom, stack_top - stack_bottom);
}

/* Called before every recorded reference (and, guarded, only when it happens). */
static VG_REGPARM(2) void on_ref(Addr addr, UWord info)
{
   pending += info >> INFO_COUNT_SHIFT;
   if (!recording)
      return;
   ULong instrs = pending;
   counted += pending;
   pending = 0;
   if (!started) {
      before_start++;
      return;
   }
   seen++;
   if (seen <= (ULong)clo_skip)
      return;
   if (!mappings_sent)
      send_mappings();
   push(addr, instrs, (info >> INFO_SIZE_SHIFT) & 0xFFFF, info & 3, 0);
   if (clo_limit > 0 && seen - (ULong)clo_skip == (ULong)clo_limit)
      stop(SUB_LIMIT);
}

/* Called on entry to a function named as the start point (`which` 0) or the stop point (1):
   counts the entry, and at the count asked for starts or stops recording. */
static VG_REGPARM(1) void on_entry(UWord which)
{
   if (!recording)
      return;
   if (which == 0 && !started && ++start_entries == (ULong)clo_start_count) {
      started = True;
      push(before_start, 0, 0, KIND_CONTROL, SUB_START);
      push(counted + pending, 0, 0, KIND_CONTROL, SUB_SKIPPED);
   } else if (which == 1 && ++stop_entries == (ULong)clo_stop_count && started) {
      /* Entries count from the program's start, so that `--start-at f:2 --stop-at f:3`
         records f's second call; a stop point before the start is never reached. */
      stop(SUB_STOP);
   }
}

/* Adds `k` to `pending` inline (no call): instructions that ran without a reference after
   them in this superblock must be counted before control may leave it. */
static void add_pending(IRSB* sb, UInt k)
{
   if (k == 0)
      return;
   IRTemp old = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp sum = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr* where = mkIRExpr_HWord((HWord)&pending);
   addStmtToIRSB(sb, IRStmt_WrTmp(old, IRExpr_Load(Iend_LE, Ity_I64, where)));
   addStmtToIRSB(sb, IRStmt_WrTmp(sum, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old),
                                                     IRExpr_Const(IRConst_U64(k)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, where, IRExpr_RdTmp(sum)));
}

/* Emits a call recording one reference. `k` holds the instructions begun since the last
   call; it travels in the call unless the call is guarded (it may not happen, and the
   instructions ran anyway), in which case it is added inline first. */
static void emit(IRSB* sb, UInt kind, IRExpr* addr, Int size, UInt* k, IRExpr* guard)
{
   if (guard) {
      add_pending(sb, *k);
      *k = 0;
   }
   UWord info = kind | ((UWord)(size & 0xFFFF) << INFO_SIZE_SHIFT) | ((UWord)*k << INFO_COUNT_SHIFT);
   IRDirty* di = unsafeIRDirty_0_N(2, "xlat_on_ref", VG_(fnptr_to_fnentry)(on_ref),
                                   mkIRExprVec_2(addr, mkIRExpr_HWord(info)));
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
   *k = 0;
}

/* Adds the recording calls for the data references of one statement, before it. */
static void instrument_data(IRSB* sb, IRTypeEnv* env, IRStmt* st, UInt* k)
{
   switch (st->tag) {
   case Ist_WrTmp: {
      IRExpr* e = st->Ist.WrTmp.data;
      if (e->tag == Iex_Load)
         emit(sb, KIND_LOAD, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty), k, NULL);
      break;
   }
   case Ist_Store: {
      IRExpr* data = st->Ist.Store.data;
      emit(sb, KIND_STORE, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(env, data)), k, NULL);
      break;
   }
   case Ist_StoreG: {
      IRStoreG* g = st->Ist.StoreG.details;
      emit(sb, KIND_STORE, g->addr, sizeofIRType(typeOfIRExpr(env, g->data)), k, g->guard);
      break;
   }
   case Ist_LoadG: {
      IRLoadG* g = st->Ist.LoadG.details;
      IRType wide, narrow;
      typeOfIRLoadGOp(g->cvt, &wide, &narrow);
      emit(sb, KIND_LOAD, g->addr, sizeofIRType(narrow), k, g->guard);
      break;
   }
   case Ist_Dirty: {
      /* Helpers that touch guest memory (cpuid, xsave, ...) declare it; a modify is a load
         then a store. */
      IRDirty* d = st->Ist.Dirty.details;
      if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
         emit(sb, KIND_LOAD, d->mAddr, d->mSize, k, d->guard);
      if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
         emit(sb, KIND_STORE, d->mAddr, d->mSize, k, d->guard);
      break;
   }
   case Ist_CAS: {
      /* Compare-and-swap reads, then writes (x86 writes back even when the compare fails). */
      IRCAS* c = st->Ist.CAS.details;
      Int size = sizeofIRType(typeOfIRExpr(env, c->dataLo)) * (c->dataHi ? 2 : 1);
      emit(sb, KIND_LOAD, c->addr, size, k, NULL);
      emit(sb, KIND_STORE, c->addr, size, k, NULL);
      break;
   }
   case Ist_LLSC: {
      IRExpr* addr = st->Ist.LLSC.addr;
      IRExpr* stored = st->Ist.LLSC.storedata;
      if (stored == NULL)
         emit(sb, KIND_LOAD, addr, sizeofIRType(typeOfIRTemp(env, st->Ist.LLSC.result)), k, NULL);
      else
         emit(sb, KIND_STORE, addr, sizeofIRType(typeOfIRExpr(env, stored)), k, NULL);
      break;
   }
   default:
      break;
   }
}

/* The kernel's 16 random bytes (AT_RANDOM, glibc's stack canary and pointer guard) change
   the reference stream: word-at-a-time string functions read past a string's end into them
   and index lookup tables with what they find. A fixed value makes recordings reproducible.
   Done before the first client instruction runs, i.e. at the first translation. */
static void fix_random_bytes(void)
{
   static Bool done = False;
   if (done || VG_(client_auxv) == NULL)
      return;
   done = True;
   for (UWord* aux = VG_(client_auxv); aux[0] != AUX_NULL; aux += 2) {
      if (aux[0] == AUX_RANDOM) {
         UChar* bytes = (UChar*)aux[1];
         for (Int i = 0; i < 16; i++)
            bytes[i] = (UChar)(0xA5 ^ i);
      }
   }
}

/* Emits a call to on_entry when the instruction at `addr` is the first of a function named
   as the start or the stop point. Instructions begun before it are counted first, so that
   the start point's instruction count is exact. */
static void emit_entry(IRSB* sb, Addr addr, UInt* k)
{
   if (clo_start_at == NULL && clo_stop_at == NULL)
      return;
   const HChar* name;
   if (!VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), addr, &name))
      return;
   for (UWord which = 0; which < 2; which++) {
      const HChar* wanted = which == 0 ? clo_start_at : clo_stop_at;
      if (wanted == NULL || VG_(strcmp)(name, wanted) != 0)
         continue;
      add_pending(sb, *k);
      *k = 0;
      IRDirty* di = unsafeIRDirty_0_N(1, "xlat_on_entry", VG_(fnptr_to_fnentry)(on_entry),
                                      mkIRExprVec_1(mkIRExpr_HWord(which)));
      addStmtToIRSB(sb, IRStmt_Dirty(di));
   }
}

static IRSB* instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout,
                        const VexGuestExtents* vge, const VexArchInfo* archinfo,
                        IRType gWordTy, IRType hWordTy)
{
   fix_random_bytes();
   IRSB* out = deepCopyIRSBExceptStmts(in);
   UInt k = 0; /* instructions begun since the last emitted call or inline add */
   for (Int i = 0; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      if (st->tag == Ist_IMark) {
         emit_entry(out, (Addr)st->Ist.IMark.addr, &k);
         k++;
         if (clo_ifetch)
            emit(out, KIND_FETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr),
                 (Int)st->Ist.IMark.len, &k, NULL);
      } else if (st->tag == Ist_Exit) {
         add_pending(out, k);
         k = 0;
      } else {
         instrument_data(out, in->tyenv, st, &k);
      }
      addStmtToIRSB(out, st);
   }
   add_pending(out, k);
   return out;
}

/* A forked child runs on under Valgrind but is not recorded: its references would
   interleave with the parent's in the one pipe. */
static void on_fork_child(ThreadId tid)
{
   recording = False;
   buf_used = 0;
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
}

/* execve replaces the program and Valgrind does not follow it (no --trace-children), so the
   recording ends here; the buffer must go out before the descriptor closes on exec.
   brk and shmdt need what their call changes: the old break, the detached segment's size.
   Valgrind runs neither with its lock released, so no other thread's system call comes
   between this and post_syscall. */
static void pre_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nargs)
{
   if (syscallno == __NR_execve || syscallno == __NR_execveat) {
      stop(SUB_EXEC);
   } else if (syscallno == __NR_brk) {
      brk_before = VG_(brk_limit);
   } else if (syscallno == __NR_shmdt) {
      NSegment const* seg = VG_(am_find_nsegment)(args[0]);
      shmdt_len = seg && seg->kind == SkShmC && seg->start == args[0] ? seg->end - seg->start + 1 : 0;
   }
}

/* Sends the address-space change a successful mmap, munmap, mremap, brk, shmat or shmdt
   made. The calls end their superblock, so the event falls between the references before
   and after them. */
static void post_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nargs, SysRes res)
{
   if (sr_isError(res))
      return;
   Addr result = sr_Res(res);
   switch (syscallno) {
   case __NR_mmap:
      push_event(EVENT_MAP, result, args[1]);
      break;
   case __NR_munmap:
      push_event(EVENT_UNMAP, args[0], args[1]);
      break;
   case __NR_mremap: {
      /* A moved mapping is sent as unmapped and mapped anew (its pages fault again, where
         Linux moves their page-table entries); one resized in place as its tail. With an
         old size of 0 (a shared mapping duplicated) nothing is unmapped. */
      Addr old = args[0];
      SizeT old_len = VG_PGROUNDUP(args[1]), new_len = VG_PGROUNDUP(args[2]);
      if (result != old) {
         push_event(EVENT_UNMAP, old, old_len);
         push_event(EVENT_MAP, result, new_len);
      } else if (new_len > old_len) {
         push_event(EVENT_MAP, old + old_len, new_len - old_len);
      } else {
         push_event(EVENT_UNMAP, old + new_len, old_len - new_len);
      }
      break;
   }
   case __NR_brk: {
      /* A failed brk returns the unchanged break; the first (brk(0)) only reads it. */
      Addr old = VG_PGROUNDUP(brk_before), now = VG_PGROUNDUP(result);
      if (now > old)
         push_event(EVENT_MAP, old, now - old);
      else
         push_event(EVENT_UNMAP, now, old - now);
      break;
   }
   case __NR_shmat: {
      NSegment const* seg = VG_(am_find_nsegment)(result);
      if (seg)
         push_event(EVENT_MAP, result, seg->end - result + 1);
      break;
   }
   case __NR_shmdt:
      push_event(EVENT_UNMAP, args[0], shmdt_len);
      break;
   default:
      break;
   }
}

static Bool process_option(const HChar* arg)
{
   if VG_INT_CLO(arg, "--xlat-fd", clo_fd) {}
   else if VG_BOOL_CLO(arg, "--xlat-ifetch", clo_ifetch) {}
   else if VG_INT_CLO(arg, "--xlat-skip", clo_skip) {}
   else if VG_INT_CLO(arg, "--xlat-limit", clo_limit) {}
   else if VG_STR_CLO(arg, "--xlat-start-at", clo_start_at) {}
   else if VG_INT_CLO(arg, "--xlat-start-count", clo_start_count) {}
   else if VG_STR_CLO(arg, "--xlat-stop-at", clo_stop_at) {}
   else if VG_INT_CLO(arg, "--xlat-stop-count", clo_stop_count) {}
   else
      return False;
   return True;
}

static void print_usage(void)
{
   VG_(printf)("    --xlat-fd=N               write records to file descriptor N (required)\n"
               "    --xlat-ifetch=no|yes      record instruction fetches [no]\n"
               "    --xlat-skip=N             references not recorded before recording starts [0]\n"
               "    --xlat-limit=N            stop after recording N references, 0 = all [0]\n"
               "    --xlat-start-at=NAME      start recording at an entry of function NAME\n"
               "    --xlat-start-count=N      ... its N-th entry [1]\n"
               "    --xlat-stop-at=NAME       stop recording at an entry of function NAME\n"
               "    --xlat-stop-count=N       ... its N-th entry [1]\n");
}

static void print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

static void post_clo_init(void)
{
   if (clo_fd < 0)
      VG_(fmsg_bad_option)("--xlat-fd", "the output file descriptor is required\n");
   if (clo_skip < 0 || clo_limit < 0)
      VG_(fmsg_bad_option)("--xlat-skip/--xlat-limit", "must not be negative\n");
   if (clo_start_count < 1 || clo_stop_count < 1)
      VG_(fmsg_bad_option)("--xlat-start-count/--xlat-stop-count", "must be at least 1\n");
   started = clo_start_at == NULL;
   out_fd = VG_(safe_fd)((Int)clo_fd);
   if (out_fd < 0)
      VG_(fmsg_bad_option)("--xlat-fd", "not an open file descriptor\n");
}

static void fini(Int exitcode)
{
   stop(SUB_END);
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
}

static void pre_clo_init(void)
{
   VG_(details_name)("xlat-record");
   VG_(details_version)(NULL);
   VG_(details_description)("memory reference recorder for xlat");
   VG_(details_copyright_author)("part of xlat");
   VG_(details_bug_reports_to)("the xlat project");
   VG_(details_avg_translation_sizeB)(300);
   VG_(basic_tool_funcs)(post_clo_init, instrument, fini);
   VG_(needs_command_line_options)(process_option, print_usage, print_debug_usage);
   VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
   VG_(atfork)(NULL, NULL, on_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(pre_clo_init)
