class ReportsController < ApplicationController
  def calc
    # ruleid: aster.ruby.code-injection
    render plain: eval(params[:expr]).to_s
  end

  def run
    action = params[:action_name]
    # ruleid: aster.ruby.code-injection
    Report.new.send(action)
  end
end
