package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSafePolicies(t *testing.T) {
	require.Equal(t, []Policy{WholeAfterUsers, WholeFenced, SubrangeAfterUsers, SubrangeFenced}, SafePolicies())
	for _, p := range SafePolicies() {
		require.True(t, p.Safe(), "%v", p)
	}
}
