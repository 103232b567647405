package dev.jrdma.spi;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;

/** The providers on the class or module path. */
public final class Providers {
    private Providers() {
    }

    /** Every provider found by {@link ServiceLoader}, sorted by name. */
    public static List<Provider> all() {
        List<Provider> list = new ArrayList<>();
        ServiceLoader.load(Provider.class, Providers.class.getClassLoader()).forEach(list::add);
        list.sort(Comparator.comparing(Provider::name));
        return list;
    }
}
