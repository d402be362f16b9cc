package main

import (
	"context"
	"fmt"
)

func cmdVM(ctx context.Context, args []string) error {
	return fmt.Errorf("vm: not written yet")
}
