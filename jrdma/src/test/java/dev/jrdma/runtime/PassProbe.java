package dev.jrdma.runtime;

import java.util.function.IntSupplier;

/** For {@code dev.jrdma.VerbsPathProbe}: the parts of an IO loop's pass, to be timed one by one. */
public final class PassProbe {
    private PassProbe() {
    }

    private static DutyCycle cycle(IoThread t) throws ReflectiveOperationException {
        var f = IoThread.class.getDeclaredField("cycle");
        f.setAccessible(true);
        return (DutyCycle) f.get(t);
    }

    /** The pass alone (no invoker around it). */
    public static IntSupplier pass(IoThread t) throws ReflectiveOperationException {
        DutyCycle c = cycle(t);
        return () -> c.pass(false);
    }

    /** The tasks' part of a pass. */
    public static IntSupplier runTasks(IoThread t) throws ReflectiveOperationException {
        DutyCycle c = cycle(t);
        return c::runTasks;
    }

    /** Source {@code i}'s poll alone. */
    public static IntSupplier source(IoThread t, int i) throws ReflectiveOperationException {
        DutyCycle c = cycle(t);
        var f = DutyCycle.class.getDeclaredField("polled");
        f.setAccessible(true);
        IoThread.Source s = ((IoThread.Source[]) f.get(c))[i];
        return s::poll;
    }
}
