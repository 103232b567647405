/**
 * What the RDMA devices of this machine are and can do: {@link dev.jrdma.device.DeviceInfo},
 * its {@link dev.jrdma.device.PortInfo ports} and their {@link dev.jrdma.device.GidInfo GIDs},
 * as {@code ibv_devinfo -v} shows them. {@link dev.jrdma.Rdma#devices()} returns them; the
 * {@code jrdma devices} command prints them.
 *
 * <p>Plain values, read once: a device is opened to read its attributes and closed again. The
 * names of the fields follow {@code struct ibv_device_attr}, {@code struct ibv_port_attr} and
 * {@code struct ibv_gid_entry} of libibverbs, so that what a reader knows from verbs applies.
 * This package sits at the bottom of the layering: it uses nothing else of jrdma.
 */
package dev.jrdma.device;
