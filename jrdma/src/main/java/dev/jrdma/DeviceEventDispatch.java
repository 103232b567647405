package dev.jrdma;

import dev.jrdma.spi.Device;
import dev.jrdma.spi.DeviceEventHandler;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The device's asynchronous events for one {@link Rdma}: a fatal one fails its connection (or
 * all, for the device), a port that goes down has every connection check that its operations
 * end, and then the application's listener ({@link Rdma.Builder#onDeviceEvent}) hears of it.
 * Every event is logged.
 *
 * <p>Threads: IO thread 0, which reads the device's events; a connection's part runs on its own
 * IO thread.
 */
final class DeviceEventDispatch implements DeviceEventHandler {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");
    private final LiveObjects live;
    private final Device device;
    private final Consumer<DeviceEvent> onDeviceEvent;
    /** Per port, how often it came up: a port-down check acts only if it has not come up since. */
    private final Map<Integer, Long> portUps = new ConcurrentHashMap<>();

    DeviceEventDispatch(LiveObjects live, Device device, Consumer<DeviceEvent> onDeviceEvent) {
        this.live = live;
        this.device = device;
        this.onDeviceEvent = onDeviceEvent;
    }

    /** On IO thread 0: a fatal event fails its connection (or all, for the device), then the listener hears of it. */
    @Override
    public void onDeviceEvent(String type, boolean fatal, int qpNum, int port) {
        Connection c = qpNum < 0 ? null : live.byQpNum(qpNum);
        if (qpNum >= 0 && c == null) {
            return;   // another instance's QP on the same device
        }
        LOG.log(fatal ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "{0}: {1}{2}{3}", device.name(), type,
                port >= 0 ? " on port " + port : "", c != null ? " for " + c : "");
        if (port >= 0 && type.equals("IBV_EVENT_PORT_ACTIVE")) {
            portUps.merge(port, 1L, Long::sum);
        } else if (port >= 0 && type.equals("IBV_EVENT_PORT_ERR")) {
            portDown(port);
        }
        if (fatal) {
            failConnections(type, qpNum, c);
        }
        Consumer<DeviceEvent> l = onDeviceEvent;
        if (l != null) {
            try {
                l.accept(new DeviceEvent(device.name(), type, fatal, port, qpNum, c == null ? null : c.handle()));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the device event listener threw", e);
            }
        }
    }

    /** A device must fail what is outstanding on a dead link within its retry budget; one that stalls is made to. */
    private void portDown(int port) {
        long ups = portUps.getOrDefault(port, 0L);
        Map<Integer, Long> upsNow = portUps;   // not this object (it holds the registry): a pending check holds only the map
        BooleanSupplier stillDown = () -> upsNow.getOrDefault(port, 0L) == ups;
        String name = device.name();
        for (Connection each : live.connections()) {
            try {
                each.io.execute(() -> each.life.portWentDown(name, port, stillDown));
            } catch (RuntimeException e) {   // its IO thread closed meanwhile
                LOG.log(System.Logger.Level.DEBUG, "port {0} down: {1}", port, e.toString());
            }
        }
    }

    /** A fatal event: its QP's connection fails, or every connection for the device's own. */
    private void failConnections(String type, int qpNum, Connection c) {
        String why = device.name() + " reported " + type + (c != null ? " for the QP " + qpNum : "");
        if (c != null) {
            c.io.execute(() -> c.life.deviceFailed(why));
        } else if (type.equals("IBV_EVENT_DEVICE_FATAL")) {
            for (Connection each : live.connections()) {
                each.io.execute(() -> each.life.deviceFailed(why));
            }
        }
    }
}
