; what a region with stores calls (_StoreWrite): @scatter, the low `nbytes` (1, 2, 4, 8) of each active lane's value v[lane] to its
; address a[lane] + delta, lane by lane (the last lane wins, as MemoryMap.store); inactive lanes' addresses are never touched
define internal void @scatter(ptr %a, ptr %v, i64 %delta, i64 %exec, i64 %n, i64 %nbytes) {
entry:
  br label %lane
lane:
  %i = phi i64 [0, %entry], [%i.next, %lane.end]
  %bits = lshr i64 %exec, %i
  %bit = trunc i64 %bits to i1
  br i1 %bit, label %put, label %lane.end
put:
  %ap = getelementptr inbounds i64, ptr %a, i64 %i
  %addr = load i64, ptr %ap
  %host = add i64 %addr, %delta
  %p = inttoptr i64 %host to ptr
  %vp = getelementptr inbounds i64, ptr %v, i64 %i
  %val = load i64, ptr %vp
  switch i64 %nbytes, label %w8 [i64 1, label %w1
                                 i64 2, label %w2
                                 i64 4, label %w4]
w1:
  %v1 = trunc i64 %val to i8
  store i8 %v1, ptr %p, align 1
  br label %lane.end
w2:
  %v2 = trunc i64 %val to i16
  store i16 %v2, ptr %p, align 1
  br label %lane.end
w4:
  %v4 = trunc i64 %val to i32
  store i32 %v4, ptr %p, align 1
  br label %lane.end
w8:
  store i64 %val, ptr %p, align 1
  br label %lane.end
lane.end:
  %i.next = add i64 %i, 1
  %idone = icmp eq i64 %i.next, %n
  br i1 %idone, label %done, label %lane
done:
  ret void
}
