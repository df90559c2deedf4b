package check

// checkKeys aggregates a Report the way bruteCheck keys its answer.
func checkKeys(rep *Report) map[oracleKey]int64 {
	out := map[oracleKey]int64{}
	for _, v := range rep.Violations {
		k := oracleKey{v.Rule, v.Earlier.Buffer, v.Earlier.Op, v.Earlier.Chain[0], v.Later.Buffer, v.Later.Op, v.Later.Chain[0]}
		out[k] += v.Bytes
	}
	return out
}

func equalKeys(a, b map[oracleKey]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
