"""Virtualisation is told from each layer's own evidence (issue 29: a Firecracker microVM whose
root file system came from a container image was reported as "running under docker")."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.probe.host import VirtFacts, classify_virt, context_warnings, virt_facts
from abibench.records import HostContext

DATA = Path(__file__).parent.parent / "data" / "virt"


def test_the_captured_firecracker_microvm_is_a_vm_and_not_a_container() -> None:
    facts = virt_facts(DATA / "firecracker")
    assert facts.acpi_oem == "FIRECK" and "hypervisor" in facts.cpu_flags
    assert facts.dockerenv and facts.root_fs == "ext4" and facts.root_source == "/dev/vda"
    virt = classify_virt(facts)
    assert (virt.machine, virt.container) == ("Firecracker microVM (KVM)", None)
    assert virt.text() == "Firecracker microVM (KVM)"
    assert any("/.dockerenv ignored" in e for e in virt.evidence)
    warning = context_warnings(HostContext(virtualization=virt.text()))
    assert warning and "docker" not in warning[0] and "Firecracker" in warning[0]


def test_without_readable_acpi_tables_the_cpu_flag_still_says_virtualised(tmp_path: Path) -> None:
    # Only root reads the ACPI tables: an unprivileged run sees the CPU flag.
    facts = virt_facts(DATA / "firecracker")
    virt = classify_virt(VirtFacts(cpu_flags=facts.cpu_flags, pid1_cgroup=facts.pid1_cgroup,
                                   root_fs=facts.root_fs, root_source=facts.root_source,
                                   dockerenv=True))
    assert (virt.machine, virt.container) == ("an unidentified hypervisor", None)
    assert classify_virt(virt_facts(tmp_path)).text() is None  # nothing at all: none detected


MACHINES = {  # one piece of machine evidence -> the name it must give
    "dmi_firecracker": (VirtFacts(dmi={"sys_vendor": "Firecracker"}), "Firecracker microVM (KVM)"),
    "dmi_qemu": (VirtFacts(dmi={"sys_vendor": "QEMU", "product_name": "Standard PC"}), "QEMU"),
    "dmi_kvm": (VirtFacts(dmi={"product_name": "KVM"}), "KVM"),
    "dmi_vmware": (VirtFacts(dmi={"sys_vendor": "VMware, Inc."}), "VMware"),
    "xen": (VirtFacts(hypervisor_type="xen"), "Xen"),
    "acpi": (VirtFacts(acpi_oem="FIRECK"), "Firecracker microVM (KVM)"),
    "flag": (VirtFacts(cpu_flags=frozenset({"fpu", "hypervisor"})), "an unidentified hypervisor"),
    "metal": (VirtFacts(cpu_flags=frozenset({"fpu"}), dmi={"sys_vendor": "Dell Inc."}), None),
}
CONTAINERS = {  # one piece of container evidence -> the engine it must give
    "docker_v1": (VirtFacts(pid1_cgroup="12:memory:/docker/0123abcd\n0::/"), "docker"),
    "kubernetes": (VirtFacts(pid1_cgroup="0::/kubepods/besteffort/pod1/abc"), "Kubernetes"),
    "podman": (VirtFacts(containerenv=True), "podman"),
    "nspawn": (VirtFacts(container_env="systemd-nspawn"), "systemd-nspawn"),
    "dockerenv_overlay": (VirtFacts(dockerenv=True, root_fs="overlay", root_source="overlay"),
                          "docker"),
    "dockerenv_on_a_disk": (VirtFacts(dockerenv=True, root_fs="ext4", root_source="/dev/vda"),
                            None),
    "dockerenv_devicemapper": (VirtFacts(dockerenv=True, root_fs="xfs",
                                         root_source="/dev/mapper/docker-253:0-1-abc"), "docker"),
    "none": (VirtFacts(pid1_cgroup="0::/init.scope", root_fs="ext4", root_source="/dev/sda1"),
             None),
}


def _merge(machine: VirtFacts, container: VirtFacts) -> VirtFacts:
    """The machine evidence of one, the container evidence of the other."""
    return VirtFacts(dmi=machine.dmi, acpi_oem=machine.acpi_oem, cpu_flags=machine.cpu_flags,
                     hypervisor_type=machine.hypervisor_type, pid1_cgroup=container.pid1_cgroup,
                     root_fs=container.root_fs, root_source=container.root_source,
                     dockerenv=container.dockerenv, containerenv=container.containerenv,
                     container_env=container.container_env)


@settings(max_examples=60, deadline=None)
@given(machine=st.sampled_from(sorted(MACHINES)), container=st.sampled_from(sorted(CONTAINERS)))
def test_each_layer_is_decided_by_its_own_evidence(machine: str, container: str) -> None:
    """Every combination of a machine and a container: neither layer's evidence changes the
    other's answer, and the one line names both."""
    (mf, want_m), (cf, want_c) = MACHINES[machine], CONTAINERS[container]
    virt = classify_virt(_merge(mf, cf))
    assert (virt.machine, virt.container) == (want_m, want_c)
    text = virt.text()
    assert (text is None) == (want_m is None and want_c is None)
    for part in (want_m, want_c):
        assert part is None or (text is not None and part in text)
