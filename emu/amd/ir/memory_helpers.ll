; what a region with global or DS loads calls (_WaveCode.load, lds_load): @find, whether [lo, hi + span) lies in one row (start, size, delta) of the
; sorted native table (true with delta 0 when lo > hi: no lane is active), the row's host-address delta stored at %d; @gather, k
; values of 1, 2 or 4 bytes (zero-extended to 32 bits) at each active lane's address + delta + 4 j into out[j * n + lane], 0 for
; inactive lanes, whose addresses are never touched
define internal i1 @find(ptr %tab, i64 %n, i64 %lo, i64 %hi, i64 %span, ptr %d) {
entry:
  %none = icmp ugt i64 %lo, %hi
  br i1 %none, label %empty, label %loop
empty:
  store i64 0, ptr %d
  ret i1 true
loop:
  %l = phi i64 [0, %entry], [%l.next, %step]
  %r = phi i64 [%n, %entry], [%r.next, %step]
  %more = icmp ult i64 %l, %r
  br i1 %more, label %step, label %found
step:
  %sum = add i64 %l, %r
  %mid = lshr i64 %sum, 1
  %mrow = mul i64 %mid, 3
  %mp = getelementptr inbounds i64, ptr %tab, i64 %mrow
  %mstart = load i64, ptr %mp
  %below = icmp ule i64 %mstart, %lo
  %mid1 = add i64 %mid, 1
  %l.next = select i1 %below, i64 %mid1, i64 %l
  %r.next = select i1 %below, i64 %r, i64 %mid
  br label %loop
found:
  %any = icmp ne i64 %l, 0
  br i1 %any, label %check, label %miss
check:
  %i = sub i64 %l, 1
  %row = mul i64 %i, 3
  %sp = getelementptr inbounds i64, ptr %tab, i64 %row
  %start = load i64, ptr %sp
  %zp = getelementptr inbounds i64, ptr %sp, i64 1
  %size = load i64, ptr %zp
  %dp = getelementptr inbounds i64, ptr %sp, i64 2
  %delta = load i64, ptr %dp
  %reach = sub i64 %hi, %start
  %fits = icmp uge i64 %size, %span
  %room = sub i64 %size, %span
  %inside = icmp ule i64 %reach, %room
  %ok = and i1 %fits, %inside
  store i64 %delta, ptr %d
  ret i1 %ok
miss:
  ret i1 false
}
define internal void @gather(ptr %a, i64 %delta, i64 %exec, i64 %n, i64 %k, i64 %nbytes, ptr %o) {
entry:
  br label %lane
lane:
  %i = phi i64 [0, %entry], [%i.next, %lane.end]
  %bits = lshr i64 %exec, %i
  %bit = trunc i64 %bits to i1
  %ap = getelementptr inbounds i64, ptr %a, i64 %i
  %addr = load i64, ptr %ap
  %host = add i64 %addr, %delta
  br label %word
word:
  %j = phi i64 [0, %lane], [%j.next, %put]
  %jb = mul i64 %j, 4
  %h = add i64 %host, %jb
  %p = inttoptr i64 %h to ptr
  %jn = mul i64 %j, %n
  %oi = add i64 %jn, %i
  %op = getelementptr inbounds i32, ptr %o, i64 %oi
  br i1 %bit, label %read, label %put
read:
  switch i64 %nbytes, label %r4 [i64 1, label %r1
                                 i64 2, label %r2]
r1:
  %b1 = load i8, ptr %p, align 1
  %v1 = zext i8 %b1 to i32
  br label %put
r2:
  %b2 = load i16, ptr %p, align 1
  %v2 = zext i16 %b2 to i32
  br label %put
r4:
  %v4 = load i32, ptr %p, align 1
  br label %put
put:
  %v = phi i32 [0, %word], [%v1, %r1], [%v2, %r2], [%v4, %r4]
  store i32 %v, ptr %op
  %j.next = add i64 %j, 1
  %jdone = icmp eq i64 %j.next, %k
  br i1 %jdone, label %lane.end, label %word
lane.end:
  %i.next = add i64 %i, 1
  %idone = icmp eq i64 %i.next, %n
  br i1 %idone, label %done, label %lane
done:
  ret void
}
