package dev.jrdma.device;

import java.util.List;

/**
 * One port of a device, as {@code ibv_query_port} reports it; the components follow
 * {@code struct ibv_port_attr}. MTUs are {@code enum ibv_mtu} values: {@link #mtuBytes(int)}
 * turns them into bytes.
 *
 * @param port        the port number, from 1
 * @param state       {@code enum ibv_port_state}; {@link #active()} and {@link #stateName()} read it
 * @param maxMtu      the largest MTU the port supports ({@code enum ibv_mtu})
 * @param activeMtu   the MTU in use ({@code enum ibv_mtu})
 * @param linkLayer   {@code IBV_LINK_LAYER_*}: InfiniBand, or Ethernet for RoCE and iWARP
 * @param lid         the port's LID (InfiniBand)
 * @param smLid       the subnet manager's LID (InfiniBand)
 * @param lmc         the LID mask control (InfiniBand)
 * @param gidTblLen   the size of the GID table
 * @param pkeyTblLen  the size of the partition key table
 * @param maxMsgSz    the largest message, in bytes
 * @param activeWidth the active link width (IB encoding)
 * @param activeSpeed the active link speed (IB encoding)
 * @param physState   the physical port state (5: LinkUp)
 * @param portCapFlags the port's capability bits ({@code IBV_PORT_*})
 * @param gids        the valid entries of the GID table, by index
 */
public record PortInfo(int port, int state, int maxMtu, int activeMtu, int linkLayer, int lid, int smLid,
                       int lmc, int gidTblLen, int pkeyTblLen, long maxMsgSz, int activeWidth, int activeSpeed,
                       int physState, int portCapFlags, List<GidInfo> gids) {
    /** {@code IBV_PORT_*} of {@code enum ibv_port_state}. */
    public static final int STATE_NOP = 0, STATE_DOWN = 1, STATE_INIT = 2, STATE_ARMED = 3, STATE_ACTIVE = 4,
            STATE_ACTIVE_DEFER = 5;
    /** {@code IBV_LINK_LAYER_*}. */
    public static final int LINK_LAYER_UNSPECIFIED = 0, LINK_LAYER_INFINIBAND = 1, LINK_LAYER_ETHERNET = 2;

    /** Copies the list of GIDs: a PortInfo does not change after it was read. */
    public PortInfo {
        gids = List.copyOf(gids);
    }

    /** {@return whether the port is up ({@code IBV_PORT_ACTIVE})} */
    public boolean active() {
        return state == STATE_ACTIVE;
    }

    /**
     * {@return whether the link layer is Ethernet: the port speaks RoCE (or iWARP), and its GIDs stand for
     * IP addresses}
     */
    public boolean ethernet() {
        return linkLayer == LINK_LAYER_ETHERNET;
    }

    /**
     * {@link #state()} as {@code ibv_devinfo} prints it ("PORT_ACTIVE", ...).
     *
     * @return the state's name, or "invalid state"
     */
    public String stateName() {
        return switch (state) {
            case STATE_NOP -> "PORT_NOP";
            case STATE_DOWN -> "PORT_DOWN";
            case STATE_INIT -> "PORT_INIT";
            case STATE_ARMED -> "PORT_ARMED";
            case STATE_ACTIVE -> "PORT_ACTIVE";
            case STATE_ACTIVE_DEFER -> "PORT_ACTIVE_DEFER";
            default -> "invalid state";
        };
    }

    /**
     * {@link #linkLayer()} as {@code ibv_devinfo} prints it ("InfiniBand", "Ethernet").
     *
     * @return "InfiniBand", "Ethernet", or "Unknown"
     */
    public String linkLayerName() {
        return switch (linkLayer) {
            case LINK_LAYER_UNSPECIFIED, LINK_LAYER_INFINIBAND -> "InfiniBand";
            case LINK_LAYER_ETHERNET -> "Ethernet";
            default -> "Unknown";
        };
    }

    /**
     * {@link #activeMtu()} in bytes (0 when it is not a valid {@code enum ibv_mtu}).
     *
     * @return the active MTU in bytes, or 0
     */
    public int activeMtuBytes() {
        return mtuBytes(activeMtu);
    }

    /**
     * {@code enum ibv_mtu} (1..5) to bytes (256..4096); 0 for any other value.
     *
     * @param mtu an {@code enum ibv_mtu} value
     * @return the bytes, or 0 when {@code mtu} is not 1 to 5
     */
    public static int mtuBytes(int mtu) {
        return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
    }
}
