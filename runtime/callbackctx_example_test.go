package runtime_test

import (
	"context"
	"fmt"

	"github.com/toolscope/toolscope/runtime"
)

// A change subscriber's ctx is a callback ctx (and so is one derived from
// it); a caller's own ctx is not. Code a subscriber calls uses this to fail
// at once rather than wait for work the subscriber may be running inside
// (R86).
func ExampleIsCallbackContext() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().OnChange(func(ctx context.Context) error {
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		fmt.Println("subscriber:", runtime.IsCallbackContext(ctx), runtime.IsCallbackContext(derived))
		return nil
	}); err != nil {
		panic(err)
	}
	def, err := runtime.NewTool("noop", "Does nothing",
		func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) { return "", nil })
	if err != nil {
		panic(err)
	}
	if _, err := reg.Global().Register(def); err != nil {
		panic(err)
	}
	fmt.Println("caller:", runtime.IsCallbackContext(context.Background()))
	// Output:
	// subscriber: true true
	// caller: false
}
