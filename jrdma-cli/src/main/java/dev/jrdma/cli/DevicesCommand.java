package dev.jrdma.cli;

import dev.jrdma.ProviderStatus;
import dev.jrdma.Rdma;
import dev.jrdma.device.Capability;
import dev.jrdma.device.DeviceInfo;
import dev.jrdma.device.GidInfo;
import dev.jrdma.device.PortInfo;
import dev.jrdma.exceptions.RdmaException;

import java.io.PrintStream;
import java.util.List;

/**
 * {@code jrdma devices [-v] [-d NAME]}: each RDMA device, its ports, GIDs with their RoCE type,
 * and the capabilities jrdma uses. Lines use ibv_devinfo's names and formats, so the two can be
 * compared line by line (a test does, in the Soft-RoCE VM); lines ibv_devinfo does not have
 * start with {@code jrdma_}. With no device it says so and lists the providers instead.
 */
final class DevicesCommand {
    private DevicesCommand() {
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        boolean verbose = false;
        String only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-v", "--verbose" -> verbose = true;
                case "-d", "--ib-dev" -> {
                    if (i + 1 == args.length) {
                        err.println("jrdma devices: -d needs a device name");
                        return 2;
                    }
                    only = args[++i];
                }
                case "-h", "--help" -> {
                    out.println("usage: jrdma devices [-v] [-d NAME]");
                    return 0;
                }
                default -> {
                    err.println("jrdma devices: unknown option '" + args[i] + "' (usage: jrdma devices [-v] [-d NAME])");
                    return 2;
                }
            }
        }
        List<DeviceInfo> devices;
        try {
            devices = Rdma.devices();
        } catch (RdmaException e) {
            return noDevice(only, "No RDMA device: " + e.getMessage(), out, err);
        }
        if (devices.isEmpty()) {
            String verbs = Rdma.providers().stream().filter(p -> p.name().equals("verbs") && !p.available())
                    .map(ProviderStatus::unavailableBecause).findFirst().orElse(null);
            return noDevice(only, verbs != null ? "No RDMA device: " + verbs
                    : "No RDMA device found (ibv_get_device_list lists none).", out, err);
        }
        boolean found = false;
        for (DeviceInfo d : devices) {
            if (only == null || only.equals(d.name())) {
                print(d, verbose, out);
                found = true;
            }
        }
        if (!found) {
            err.println("jrdma devices: device " + only + " not found (there are "
                    + String.join(", ", devices.stream().map(DeviceInfo::name).toList()) + ")");
            return 1;
        }
        return 0;
    }

    /**
     * No device at all: without {@code -d} that is an answer (which providers there are, and what
     * auto chooses instead); with {@code -d NAME} the named device is not there, an error.
     */
    private static int noDevice(String only, String why, PrintStream out, PrintStream err) {
        if (only != null) {
            err.println("jrdma devices: device " + only + " not found (" + why + ")");
            return 1;
        }
        out.println(why);
        printProviders(out);
        return 0;
    }

    private static void printProviders(PrintStream out) {
        out.println("Providers:");
        for (ProviderStatus p : Rdma.providers()) {
            out.println("  " + p);
        }
        try {
            out.println("The default provider, auto, chooses " + Rdma.autoChoice().replaceFirst("^auto: ", ""));
        } catch (RdmaException e) {
            out.println("The default provider, auto, finds nothing it can use: " + e.getMessage());
        }
    }

    private static String guid(long g) {
        return String.format("%04x:%04x:%04x:%04x", (g >>> 48) & 0xffff, (g >>> 32) & 0xffff, (g >>> 16) & 0xffff,
                g & 0xffff);
    }

    private static String mtu(int mtu) {
        int bytes = PortInfo.mtuBytes(mtu);
        return (bytes == 0 ? "invalid MTU" : Integer.toString(bytes)) + " (" + mtu + ")";
    }

    private static String names(java.util.Set<Capability> set) {
        return set.isEmpty() ? "none" : String.join(" ", set.stream().map(c -> c.name().toLowerCase(java.util.Locale.ROOT)).toList());
    }

    private static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }

    static void print(DeviceInfo d, boolean verbose, PrintStream out) {
        out.println("hca_id:\t" + d.name());
        out.println("\ttransport:\t\t\t" + d.transportName() + " (" + d.transportType() + ")");
        if (!d.fwVer().isEmpty()) {
            out.println("\tfw_ver:\t\t\t\t" + d.fwVer());
        }
        out.println("\tnode_guid:\t\t\t" + guid(d.nodeGuid()));
        out.println("\tsys_image_guid:\t\t\t" + guid(d.sysImageGuid()));
        out.printf("\tvendor_id:\t\t\t0x%04x%n", d.vendorId());
        out.println("\tvendor_part_id:\t\t\t" + d.vendorPartId());
        out.printf("\thw_ver:\t\t\t\t0x%X%n", d.hwVer());
        out.println("\tphys_port_cnt:\t\t\t" + d.physPortCnt());
        if (verbose) {
            out.printf("\tmax_mr_size:\t\t\t0x%x%n", d.maxMrSize());
            out.printf("\tpage_size_cap:\t\t\t0x%x%n", d.pageSizeCap());
            out.println("\tmax_qp:\t\t\t\t" + d.maxQp());
            out.println("\tmax_qp_wr:\t\t\t" + d.maxQpWr());
            out.printf("\tdevice_cap_flags:\t\t0x%08x%n", d.deviceCapFlags());
            out.println("\tmax_sge:\t\t\t" + d.maxSge());
            out.println("\tmax_sge_rd:\t\t\t" + d.maxSgeRd());
            out.println("\tmax_cq:\t\t\t\t" + d.maxCq());
            out.println("\tmax_cqe:\t\t\t" + d.maxCqe());
            out.println("\tmax_mr:\t\t\t\t" + d.maxMr());
            out.println("\tmax_pd:\t\t\t\t" + d.maxPd());
            out.println("\tmax_qp_rd_atom:\t\t\t" + d.maxQpRdAtom());
            out.println("\tmax_res_rd_atom:\t\t" + d.maxResRdAtom());
            out.println("\tmax_qp_init_rd_atom:\t\t" + d.maxQpInitRdAtom());
            out.println("\tatomic_cap:\t\t\t" + d.atomicCapName() + " (" + d.atomicCap() + ")");
            out.println("\tmax_mw:\t\t\t\t" + d.maxMw());
            out.println("\tmax_mcast_grp:\t\t\t" + d.maxMcastGrp());
            out.println("\tmax_ah:\t\t\t\t" + d.maxAh());
            out.println("\tmax_srq:\t\t\t" + d.maxSrq());
            if (d.maxSrq() > 0) {
                out.println("\tmax_srq_wr:\t\t\t" + d.maxSrqWr());
                out.println("\tmax_srq_sge:\t\t\t" + d.maxSrqSge());
            }
            out.println("\tmax_pkeys:\t\t\t" + d.maxPkeys());
            out.println("\tlocal_ca_ack_delay:\t\t" + d.localCaAckDelay());
            out.printf("\tdevice_cap_flags_ex:\t\t0x%X%n", d.deviceCapFlagsEx());
        }
        // What jrdma itself relies on, in one place.
        out.println("\tjrdma_capabilities:\t\tatomics=" + yesNo(d.atomics()) + " srq=" + yesNo(d.srq())
                + " odp=" + yesNo(d.odp()) + " max_rd_atomic=" + d.maxQpRdAtom() + " max_sge=" + d.maxSge()
                + " max_qp_wr=" + d.maxQpWr() + " max_cqe=" + d.maxCqe());
        // Which optional capabilities it has and which it lacks (with -v: where each is read from).
        java.util.Set<Capability> has = d.capabilities();
        out.println("\tjrdma_has:\t\t\t" + names(has));
        out.println("\tjrdma_lacks:\t\t\t"
                + names(java.util.EnumSet.complementOf(has.isEmpty() ? java.util.EnumSet.noneOf(Capability.class)
                        : java.util.EnumSet.copyOf(has))));
        if (verbose) {
            for (Capability c : Capability.values()) {
                out.println("\t\tjrdma_capability " + c.name().toLowerCase(java.util.Locale.ROOT) + ":\t" + yesNo(has.contains(c))
                        + " (" + c.source() + ")");
            }
        }
        for (PortInfo p : d.ports()) {
            out.println("\t\tport:\t" + p.port());
            out.println("\t\t\tstate:\t\t\t" + p.stateName() + " (" + p.state() + ")");
            out.println("\t\t\tmax_mtu:\t\t" + mtu(p.maxMtu()));
            out.println("\t\t\tactive_mtu:\t\t" + mtu(p.activeMtu()));
            out.println("\t\t\tsm_lid:\t\t\t" + p.smLid());
            out.println("\t\t\tport_lid:\t\t" + p.lid());
            out.printf("\t\t\tport_lmc:\t\t0x%02x%n", p.lmc());
            out.println("\t\t\tlink_layer:\t\t" + p.linkLayerName());
            if (verbose) {
                out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", p.maxMsgSz());
                out.printf("\t\t\tport_cap_flags:\t\t0x%08x%n", p.portCapFlags());
                out.println("\t\t\tpkey_tbl_len:\t\t" + p.pkeyTblLen());
                out.println("\t\t\tgid_tbl_len:\t\t" + p.gidTblLen());
            }
            for (GidInfo g : p.gids()) {
                if (!verbose && !g.roceV2() && p.ethernet()) {
                    continue;   // without -v, an Ethernet port shows only its RoCE v2 GIDs (the ones jrdma uses)
                }
                String type = p.ethernet() ? ", " + g.typeName() : "";
                out.printf("\t\t\tGID[%3d]:\t\t%s%s%n", g.index(),
                        GidText.of(g.gid()), type);
            }
            out.println();
        }
    }
}
