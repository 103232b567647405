package dev.jrdma.provider.verbs.ffi;

import dev.jrdma.os.CLayouts;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * A {@code struct verbs_context} in Java memory whose ops are Java upcalls: the way librpma's
 * mocks-ibverbs.c replaces the ops table, so every path through a function pointer (and every
 * failure it can report) is tested without a device.
 */
final class FakeVerbsContext implements AutoCloseable {
    final Arena arena = Arena.ofConfined();
    final MemorySegment verbsContext = arena.allocate(VerbsContext.LAYOUT);
    /** The {@code struct ibv_context} inside, as a provider hands it out. */
    final MemorySegment context = verbsContext.asSlice(CLayouts.offset(VerbsContext.LAYOUT, "context"),
            IbvContext.LAYOUT.byteSize());

    FakeVerbsContext() {
        context.set(CLayouts.PTR, CLayouts.offset(IbvContext.LAYOUT, "abi_compat"), MemorySegment.ofAddress(-1L));
        sz(VerbsContext.LAYOUT.byteSize());
    }

    /** What a provider built against another rdma-core would say its verbs_context size is. */
    void sz(long size) {
        verbsContext.set(CLayouts.SIZE_T, CLayouts.offset(VerbsContext.LAYOUT, "sz"), size);
    }

    void notExtended() {
        context.set(CLayouts.PTR, CLayouts.offset(IbvContext.LAYOUT, "abi_compat"), MemorySegment.NULL);
    }

    /** Sets verbs_context member {@code op} to an upcall of {@code target}. */
    void op(String op, MethodHandle target, FunctionDescriptor fd) {
        verbsContext.set(CLayouts.PTR, CLayouts.offset(VerbsContext.LAYOUT, op), stub(target, fd));
    }

    /** Sets ibv_context.ops member {@code op} to an upcall of {@code target}. */
    void contextOp(String op, MethodHandle target, FunctionDescriptor fd) {
        context.set(CLayouts.PTR, CLayouts.offset(IbvContext.LAYOUT, "ops." + op), stub(target, fd));
    }

    MemorySegment stub(MethodHandle target, FunctionDescriptor fd) {
        return Linker.nativeLinker().upcallStub(target, fd, arena);
    }

    /** A handle of {@code type} that ignores its arguments and returns {@code value}. */
    static MethodHandle returning(int value, Class<?>... params) {
        MethodHandle constant = MethodHandles.constant(int.class, value);
        return MethodHandles.dropArguments(constant, 0, params);
    }

    static FunctionDescriptor intFn(int nArgs) {
        ValueLayout[] args = new ValueLayout[nArgs];
        java.util.Arrays.fill(args, ValueLayout.ADDRESS);
        return FunctionDescriptor.of(ValueLayout.JAVA_INT, args);
    }

    static MethodType intType(int nArgs) {
        return MethodType.methodType(int.class, java.util.Collections.nCopies(nArgs, MemorySegment.class));
    }

    @Override
    public void close() {
        arena.close();
    }
}
