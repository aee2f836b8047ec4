package netns

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table in each run's namespace.
const TableName = "bumper"

// applyFirewall installs, in the current thread's namespace, an inet table that:
//   - DNATs new TCP from the TAP to gateway:ProxyPort onto proxy:proxyPort;
//   - forwards only that (plus its replies) from the TAP to the veth, and rejects all else;
//   - masquerades it behind the namespace's veth address;
//   - accepts nothing addressed to the namespace itself, except on lo.
//
// IPv6, DNS, ICMP and ARP-level tricks get nowhere: only IPv4 TCP to one address and
// port is ever forwarded, and the guest's own routes do not matter because the rules sit
// outside the VM.
func applyFirewall(proxy netip.Addr, proxyPort int) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("failed to open nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: TableName})
	drop := nftables.ChainPolicyDrop
	pre := c.AddChain(&nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	post := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &drop})
	in := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &drop})

	gw := netip.MustParseAddr(Gateway)
	// prerouting: iifname tap0 ip daddr 10.0.2.2 tcp dport 3128 dnat ip to proxy:port
	c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: concat(
		ifname(expr.MetaKeyIIFNAME, TAPName), ipv4TCP(), ipDaddr(gw), tcpDport(ProxyPort),
		[]expr.Any{
			&expr.Immediate{Register: 1, Data: proxy.AsSlice()},
			&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(uint16(proxyPort))},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
		})})
	// postrouting: oifname veth0 masquerade
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: concat(
		ifname(expr.MetaKeyOIFNAME, PeerName), []expr.Any{&expr.Masq{}})})
	// forward: ct state established,related accept
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: concat(
		ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), accept())})
	// forward: iifname tap0 oifname veth0 ip daddr proxy tcp dport port ct state new accept
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: concat(
		ifname(expr.MetaKeyIIFNAME, TAPName), ifname(expr.MetaKeyOIFNAME, PeerName),
		ipv4TCP(), ipDaddr(proxy), tcpDport(proxyPort), ctState(expr.CtStateBitNEW), accept())})
	// forward: everything else is rejected (counted, so tests and audits can see it).
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: []expr.Any{
		&expr.Counter{},
		&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED},
	}})
	// input: only loopback reaches the namespace itself.
	c.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: concat(ifname(expr.MetaKeyIIFNAME, "lo"), accept())})
	c.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: []expr.Any{&expr.Counter{}}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("failed to install the run's nftables table (is nf_tables available?): %w", err)
	}
	return nil
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func ifname(key expr.MetaKey, name string) []expr.Any {
	b := make([]byte, 16)
	copy(b, name)
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b},
	}
}

func ipv4TCP() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
	}
}

func ipDaddr(a netip.Addr) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
	}
}

func tcpDport(port int) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(uint16(port))},
	}
}

func ctState(bits uint32) []expr.Any {
	mask := make([]byte, 4)
	binary.NativeEndian.PutUint32(mask, bits)
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
	}
}

func accept() []expr.Any { return []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}} }
