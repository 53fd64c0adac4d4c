package pathinfo

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestReadCgroupCPU(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v1proc := fstest.MapFS{"cgroup": file("4:memory:/x\n2:cpuacct:/\n1:cpu:/blast/srv\n0::/\n")}
	v2proc := fstest.MapFS{"cgroup": file("0::/kubepods/pod1/c1\n")}
	for _, tc := range []struct {
		name      string
		proc, sys fstest.MapFS
		want      *CgroupCPU
	}{
		{"v1, the process's own cgroup", v1proc, fstest.MapFS{
			"cpu/cpu.cfs_quota_us":            file("-1\n"),
			"cpu/blast/srv/cpu.cfs_quota_us":  file("5000\n"),
			"cpu/blast/srv/cpu.cfs_period_us": file("100000\n"),
			"cpu/blast/srv/cpu.stat":          file("nr_periods 25\nnr_throttled 24\nthrottled_time 2353744832\nnr_bursts 0\n"),
		}, &CgroupCPU{Cgroup: "/blast/srv", QuotaUs: 5000, PeriodUs: 100000, Periods: 25, Throttled: 24, ThrottledUs: 2353744}},
		{"v1, a quota on an ancestor", v1proc, fstest.MapFS{
			"cpu/cpu.cfs_quota_us":           file("-1\n"),
			"cpu/blast/cpu.cfs_quota_us":     file("200000\n"),
			"cpu/blast/cpu.cfs_period_us":    file("100000\n"),
			"cpu/blast/srv/cpu.cfs_quota_us": file("-1\n"),
		}, &CgroupCPU{Cgroup: "/blast", QuotaUs: 200000, PeriodUs: 100000}},
		{"v1, no quota", v1proc, fstest.MapFS{"cpu/cpu.cfs_quota_us": file("-1\n"), "cpu/blast/srv/cpu.cfs_quota_us": file("-1\n")}, nil},
		{"v2, a container's limit", v2proc, fstest.MapFS{
			"cpu.max":                  file("max 100000\n"),
			"kubepods/pod1/cpu.max":    file("50000 100000\n"),
			"kubepods/pod1/cpu.stat":   file("usage_usec 9\nnr_periods 10\nnr_throttled 7\nthrottled_usec 350000\n"),
			"kubepods/pod1/c1/cpu.max": file("max 100000\n"),
		}, &CgroupCPU{Cgroup: "/kubepods/pod1", QuotaUs: 50000, PeriodUs: 100000, Periods: 10, Throttled: 7, ThrottledUs: 350000}},
		{"v2, none", v2proc, fstest.MapFS{"cpu.max": file("max 100000\n")}, nil},
		{"no /proc entry", fstest.MapFS{}, fstest.MapFS{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readCgroupCPU(tc.proc, tc.sys)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	a := &CgroupCPU{Cgroup: "/blast/srv", QuotaUs: 5000, PeriodUs: 100000, Periods: 25, Throttled: 24, ThrottledUs: 2353744}
	b := &CgroupCPU{Cgroup: "/blast/srv", QuotaUs: 5000, PeriodUs: 100000, Periods: 35, Throttled: 33, ThrottledUs: 3300000}
	if diff := cmp.Diff(&CPUQuota{Cgroup: "/blast/srv", CPUs: 0.05, Periods: 10, Throttled: 9, ThrottledSeconds: 0.946256}, quotaBetween(a, b)); diff != "" {
		t.Errorf("quota (-want +got):\n%s", diff)
	}
	if quotaBetween(b, a) != nil || quotaBetween(nil, b) != nil {
		t.Error("a quota between counters that went back, or from nothing")
	}
}

func FuzzCgroupCPU(f *testing.F) {
	f.Add("1:cpu:/blast/srv\n0::/\n", "5000\n", "nr_periods 25\nnr_throttled 24\nthrottled_time 2353744832\n", "50000 100000\n")
	f.Add("0::/kubepods/pod1\n", "-1\n", "nr_periods x\n", "max 100000\n")
	f.Fuzz(func(t *testing.T, cgroup, quota, stat, cpuMax string) {
		file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
		proc := fstest.MapFS{"cgroup": file(cgroup)}
		sys := fstest.MapFS{
			"cpu/cpu.cfs_quota_us": file(quota), "cpu/cpu.cfs_period_us": file("100000"), "cpu/cpu.stat": file(stat),
			"cpu/blast/srv/cpu.cfs_quota_us": file(quota), "cpu/blast/srv/cpu.cfs_period_us": file("100000"), "cpu/blast/srv/cpu.stat": file(stat),
			"cpu.max": file(cpuMax), "cpu.stat": file(stat), "kubepods/pod1/cpu.max": file(cpuMax), "kubepods/pod1/cpu.stat": file(stat),
		}
		if c := readCgroupCPU(proc, sys); c != nil && (c.QuotaUs <= 0 || c.PeriodUs <= 0) {
			t.Fatalf("a quota of %d every %d µs", c.QuotaUs, c.PeriodUs)
		}
	})
}
