package nicinfo

import (
	"fmt"
	"regexp"
	"strings"
)

// describeNaming turns name_assign_type and udev's properties into words.
func describeNaming(name string, assign *int, udev map[string]string) Naming {
	n := Naming{AssignType: assign, Udev: udev}
	t := -1
	if assign != nil {
		t = *assign
	}
	switch t {
	case 1:
		n.Kind = "enumerated"
		n.Words = "enumerated by the kernel in probe order: may change between boots"
	case 2:
		n.Kind = "predictable"
		n.Words = "predictable, chosen by the kernel or driver (firmware label, fixed name): stable"
		n.Stable = true
	case 3:
		n.Kind = "user"
		n.Words = "named by userspace when it was created (ip link add, a container runtime): as stable as that configuration"
		n.Stable = true
	case 4:
		n.Kind = "renamed"
		n.Words = "renamed by userspace (udev/systemd-udevd, a .link file or ip link set name)"
		n.Stable = true
	default:
		n.Kind = "unknown"
		n.Words = "unknown: the kernel did not record how the name was assigned"
	}
	if t == 4 && udev != nil {
		for _, p := range []struct{ key, words string }{
			{"ID_NET_NAME_ONBOARD", "the firmware's onboard index: stable across boots"},
			{"ID_NET_NAME_SLOT", "the PCIe hotplug slot number: stable while the card stays in its slot"},
			{"ID_NET_NAME_PATH", "the bus path: stable while the card stays in its slot and the firmware does not renumber buses"},
			{"ID_NET_NAME_MAC", "the MAC address: stable while the card is not replaced"},
		} {
			if udev[p.key] == name {
				n.Words = fmt.Sprintf("predictable, set by udev (%s) from %s", p.key, p.words)
				break
			}
		}
		if f := pinnedBy(name, udev); f != "" {
			n.Words = "pinned by the .link file " + f + ": stable"
		}
	}
	if t == 1 && enumerated.MatchString(name) {
		n.Words += " (an ethN name can swap with another card's after a kernel or module-order change)"
	}
	return n
}

var enumerated = regexp.MustCompile(`^eth[0-9]+$`)

// NamingAdvice tells how to pin a name to one card.
type NamingAdvice struct {
	Name string `json:"name"`
	// Match is the systemd .link [Match] line used.
	Match string `json:"match"`
	// LinkPath is where the .link file goes; LinkFile is its content.
	LinkPath string `json:"link_path"`
	LinkFile string `json:"link_file"`
	// UdevPath and UdevRule are the legacy udev equivalent.
	UdevPath string `json:"udev_path"`
	UdevRule string `json:"udev_rule"`
	// Notes are the things to do afterwards and the caveats.
	Notes []string `json:"notes"`
}

// interface names the kernel accepts: 1 to 15 bytes, no '/', ':' or whitespace.
var validName = regexp.MustCompile(`^[^/:\s]{1,15}$`)

// Advise returns the .link file (and legacy udev rule) that gives ifc the name
// newName on every boot. It matches the permanent MAC when the driver reports
// one, else a MAC the hardware owns, else the bus path.
func Advise(ifc *Interface, newName string) (*NamingAdvice, error) {
	if !validName.MatchString(newName) || newName == "." || newName == ".." {
		return nil, fmt.Errorf("nicinfo: pin %s: %q is not a valid interface name (1-15 characters, no '/', ':' or spaces)", ifc.Name, newName)
	}
	if enumerated.MatchString(newName) {
		return nil, fmt.Errorf("nicinfo: pin %s: %q is in the kernel's ethN namespace and would race with its enumeration; pick another name (e.g. lan0)", ifc.Name, newName)
	}
	if ifc.Virtual {
		return nil, fmt.Errorf("nicinfo: pin %s: a virtual interface has no card to match; it gets its name from whatever creates it (ip link add, a container runtime, systemd-networkd .netdev)", ifc.Name)
	}
	a := &NamingAdvice{Name: newName}
	m, err := pinMatch(ifc)
	if err != nil {
		return nil, err
	}
	a.Match, a.Notes = m.link, m.notes
	udevMatch := m.udev
	a.LinkPath = "/etc/systemd/network/10-" + newName + ".link"
	a.LinkFile = fmt.Sprintf("# %s: pin the name %s to this card (was %s, driver %s)\n[Match]\n%s\n\n[Link]\nName=%s\n",
		a.LinkPath, newName, ifc.Name, orDash(ifc.Driver), a.Match, newName)
	a.UdevPath = "/etc/udev/rules.d/70-persistent-net.rules"
	a.UdevRule = fmt.Sprintf(`SUBSYSTEM=="net", ACTION=="add", %s, NAME="%s"`, udevMatch, newName) + "\n"
	a.Notes = append(a.Notes,
		"the file name must sort before 99-default.link (hence 10-)",
		"rebuild the initramfs (update-initramfs -u, dracut -f or mkinitcpio -P): a name set in the initrd is never changed later",
		"reboot, or run: udevadm trigger --action=add /sys/class/net/"+ifc.Name+" with the interface down",
		"update every configuration that names "+ifc.Name+" (netplan, ifupdown, NetworkManager, firewall rules)",
	)
	if ifc.Naming.Kind == "enumerated" {
		a.Notes = append(a.Notes, ifc.Name+" was enumerated by the kernel: it can swap with another card's name between kernels, which is why pinning helps")
	}
	return a, nil
}

// linkMatch is how a .link file (and a udev rule) recognises one card.
type linkMatch struct {
	link  string   // the [Match] line: PermanentMACAddress=..., MACAddress=... or Path=pci-...
	udev  string   // the udev rule's match
	notes []string // caveats of the match
}

// pinMatch chooses what identifies ifc's card on every boot: the
// permanent MAC when the driver reports one, else a MAC the hardware owns,
// else the PCI path.
func pinMatch(ifc *Interface) (linkMatch, error) {
	var m linkMatch
	switch {
	case ifc.PermMAC != "" && ifc.PermMAC != "00:00:00:00:00:00":
		m.link = "PermanentMACAddress=" + ifc.PermMAC
		m.udev = fmt.Sprintf(`ATTR{address}=="%s"`, ifc.PermMAC)
		if ifc.MAC != ifc.PermMAC {
			m.notes = append(m.notes, fmt.Sprintf("the current MAC %s differs from the permanent one; the udev rule matches the current address, so use the .link file", ifc.MAC))
			m.udev = fmt.Sprintf(`ATTR{address}=="%s"`, ifc.MAC)
		}
	case ifc.MAC != "" && ifc.MAC != "00:00:00:00:00:00" && ifc.MACAssign == "permanent":
		m.link = "MACAddress=" + ifc.MAC
		m.udev = fmt.Sprintf(`ATTR{address}=="%s"`, ifc.MAC)
	case ifc.PCI != nil && ifc.PCI.Address != "":
		m.link = "Path=pci-" + ifc.PCI.Address
		m.udev = fmt.Sprintf(`KERNELS=="%s"`, ifc.PCI.Address)
		m.notes = append(m.notes, "no hardware-owned MAC address: matching the PCI path, which changes if the card moves to another slot")
	default:
		return m, fmt.Errorf("nicinfo: pin %s: no permanent MAC and no PCI path to match (virtual interfaces get their names from whatever creates them)", ifc.Name)
	}
	return m, nil
}

// pinnedBy is the .link file that set name, from udev's database ("" when
// no file but systemd's default one did).
func pinnedBy(name string, udev map[string]string) string {
	if f := udev["ID_NET_LINK_FILE"]; f != "" && !strings.HasSuffix(f, "99-default.link") && udev["ID_NET_NAME"] == name {
		return f
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
