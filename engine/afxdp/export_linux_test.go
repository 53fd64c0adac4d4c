package afxdp

// LiveMaps is the number of UMEM and ring mappings not yet unmapped.
func LiveMaps() int64 { return liveMaps.Load() }
